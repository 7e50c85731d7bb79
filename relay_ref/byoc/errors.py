from relay_ref.diagnostics import RelayError


class CodegenUnsupported(RelayError, ValueError):
    """A backend's codegen refuses a region."""
