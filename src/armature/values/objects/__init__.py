"""Python objects and classes: instances of user classes (``ObjectValue``)
and their ``__dict__``, classes (``ClassValue``) and class statements run in
the frame, metaclasses, classes made anew on every call, user subclasses of
dict/list/tuple, and ``threading.local`` objects.

May import at module level: the core and ``functions`` (``class_def``: the
``__class__`` cell of a class body is a function cell).  The core is
``values.base``, ``values.constant``, ``values.builder`` (which imports the
sub-packages only inside functions) and ``values.kinds``.  Anything else is
reached inside a function, a value kind through ``values.kinds``.  This
``__init__`` imports nothing, so importing the package costs nothing.
"""
