"""``torch.nn.Module`` instances: modules from outside the frame
(``modules``), modules constructed in the frame and built for real by the
transformed function's setup (``fresh_modules``, ``fresh_module_methods``,
``user_module_construction``), and ``module.__dict__`` (``module_dict``).

May import at module level: the core and ``objects`` (a user module class is
audited as an object class).  The core is ``values.base``,
``values.constant``, ``values.builder`` (which imports the sub-packages only
inside functions) and ``values.kinds``.  Anything else is reached inside a
function, a value kind through ``values.kinds``.  This ``__init__`` imports
nothing, so importing the package costs nothing.
"""
