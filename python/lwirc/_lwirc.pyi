"""The extension module (crates/lwirc-py): the library on bytes and JSON text. Use the
functions of :mod:`lwirc` instead; these are what they call."""

from typing import Callable, List, Optional, Sequence, Tuple, Union

__version__: str

Named = Tuple[str, bytes]

class Error(Exception):
    """args: (message, JSON report of the findings or None)."""

def main(argv: Sequence[str]) -> int: ...
def validate(draft: Optional[Named], definition: Optional[Named] = None) -> str: ...
def canonicalize(value: Named) -> bytes: ...
def version_of(value: Named) -> str: ...
def explain(code: Optional[str] = None) -> str: ...
def fix(
    draft: Named, definition: Optional[Named] = None, unsafe_fixes: bool = False
) -> Tuple[bytes, str]: ...
def compile(
    definition: Named,
    input: Optional[Named],
    planner: Callable[[str], str],
    planner_name: str,
    registry: str,
    session: Optional[str],
    resume: bool,
    max_repair_attempts: Optional[int],
    max_planner_calls: Optional[int],
    timeout: float,
    max_output: int,
) -> str: ...
