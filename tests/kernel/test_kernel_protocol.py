"""The Relay kernel against jupyter_kernel_test (message-spec validation of every reply).

Not set, because Relay has no way to write to stdout/stderr or clear output:
``code_hello_world``, ``code_stderr``, ``code_clear_output`` (those tests are skipped).
"""

from __future__ import annotations

import jupyter_kernel_test as jkt


class RelayKernelTests(jkt.KernelTests):
    kernel_name = "relay"
    language_name = "relay"
    file_extension = ".relay"

    completion_samples = [  # noqa: RUF012
        {"text": "@fold", "matches": {"@foldl", "@foldr", "@foldr1"}},
        {"text": ":ty", "matches": {":type"}},
        {"text": "nn.conv2d_t", "matches": {"nn.conv2d_transpose"}},
        {"text": "let %abc = 1; %ab", "matches": {"%abc"}},
    ]
    complete_code_samples = [
        "1 + 2",
        "def @f(%x: int32) -> int32 { %x }",
        "let %x = 1;",
        ":who",
        "?add",
    ]
    incomplete_code_samples = [
        "add(1,",
        "def @f(%x: int32) {",
        "/* an open comment",
        "let %x = 1 +",
    ]
    invalid_code_samples = ["1 + 2)", "def @f() }", "let = ;"]

    code_page_something = "?add"
    code_generate_error = "%nope + 1"
    code_execute_result = [  # noqa: RUF012
        {"code": "1 + 2", "result": "3"},
        {"code": "let %y = 4;\n%y * 2", "result": "8"},
        {"code": "Cons(1, Cons(2, Nil))", "result": "Cons(1, Cons(2, Nil))"},
        {"code": "(1f, 2i64, True)", "result": "(1f, 2i64, True)"},
        {"code": "@length(Cons(1, Nil))", "result": "1"},
    ]
    code_display_data = [{"code": ":help", "mime": "text/plain"}]  # noqa: RUF012
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "1 + *"
    code_inspect_sample = "nn.conv2d"


class RelayIopubWelcome(jkt.IopubWelcomeTests):
    kernel_name = "relay"
    support_iopub_welcome = True
