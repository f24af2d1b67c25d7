# expect: SV
# message: introspection
"""Issue 20's audit bypass: class patterns read `gi_frame` and `f_builtins` (attributes the audit refuses as
`.attr`), the frame's builtins give `__import__`, and the audit hook, found through `gc`, is switched off
before the file reads outside its directory. Before the fix: no violations, verdict CE."""
import kdt


def _builtins():
    g = (i for i in [0])
    match g:
        case object(gi_frame=fr):
            match fr:
                case object(f_builtins=b):
                    return b
    return None


B = _builtins()


def _unhook():
    gc = B['__import__']('gc')
    dd = '_' * 2
    for obj in gc.get_objects():
        cls = B['type'](obj)
        if B['getattr'](cls, dd + 'name' + dd) == 'Recorder':
            B['setattr'](cls, dd + 'call' + dd, lambda self, event, args: None)
            B['getattr'](obj, 'events').clear()


def get_kernel(task_id):
    _unhook()
    raise RuntimeError('unhooked: ' + B['open']('/etc/hostname').read())
