"""Tensors and torch: tensors and their attributes (``tensor``,
``tensor_attrs``), symbolic sizes and ints (``symbolic``), torch functions
and ops as graph nodes (``torch_ops``), tensor subclasses and
``__torch_function__`` (``torch_function``), functorch's ``vmap``,
``autograd.Function``, autocast and inference mode, and the torch/CUDA
state queries answered while tracing (``cuda_queries``, ``state_queries``).

May import: the core (``values.base``, ``values.constant``,
``values.kinds``) and each other at module level; other sub-packages only
inside functions, and preferably through ``values.kinds``.  Nothing is
imported here: importing the package costs nothing.
"""
