"""``torch.nn.Module`` instances: modules from outside the frame
(``modules``), modules constructed in the frame and built for real by the
transformed function's setup (``fresh_modules``, ``fresh_module_methods``,
``user_module_construction``), and ``module.__dict__`` (``module_dict``).

May import: the core (``values.base``, ``values.constant``,
``values.kinds``) and each other at module level; other sub-packages only
inside functions, and preferably through ``values.kinds``.  Nothing is
imported here: importing the package costs nothing.
"""
