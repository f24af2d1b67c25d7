# expect: CE
# message: InternalError: Line 1, Col 1, internal error: please retry me
"""Issue 20 finding 6: a contestant's own .compile raises the front end's InternalError (task 1) or a
subclass of it the file defines (task 4). Their code raised it: CE, never IE (which would be retried)."""
from kdt.language.errors import InternalError


class MyInternalError(InternalError):
    pass


class Claims:
    def __init__(self, error):
        self.error = error

    def compile(self, task_args, io_tensors):
        raise self.error("internal error: please retry me", 1, 1)


def get_kernel(task_id):
    return Claims(InternalError if task_id == 1 else MyInternalError)
