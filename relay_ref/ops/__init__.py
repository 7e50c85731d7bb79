"""Operator families. Importing this package registers every built-in operator."""
