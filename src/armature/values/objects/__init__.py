"""Python objects and classes: instances of user classes (``ObjectValue``)
and their ``__dict__``, classes (``ClassValue``) and class statements run in
the frame, metaclasses, classes made anew on every call, user subclasses of
dict/list/tuple, and ``threading.local`` objects.

May import: the core (``values.base``, ``values.constant``,
``values.kinds``) at module level; other sub-packages only inside
functions, and preferably through ``values.kinds``.  Nothing is imported
here: importing the package costs nothing.
"""
