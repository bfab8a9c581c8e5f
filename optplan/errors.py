"""The one exception type for bad input.

Every fault in a user's file (a syntax error, an unknown op, a use before definition, a
negative size) is raised as `InputError` carrying where it is; the command line prints
`str(error)` as one line and exits with status 2.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input, with the place it was found: `file:line:col: message`."""

    def __init__(self, message: str, *, file: str = "", line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def located(self, file: str) -> InputError:
        """The same error, naming `file` if it did not name one yet."""
        if self.file:
            return self
        return InputError(self.message, file=file, line=self.line, col=self.col)

    def __str__(self) -> str:
        if not self.file and not self.line:
            return self.message
        where = self.file or "<input>"
        if self.line:
            where += f":{self.line}"
            if self.col:
                where += f":{self.col}"
        return f"{where}: {self.message}"
