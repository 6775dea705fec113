from typing import Any


def import_demo_mailbox(*, owner: Any, stdout: Any) -> None:
    stdout.write("demo mailbox not yet available")
