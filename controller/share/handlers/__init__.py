"""The share groups' request handlers (see :mod:`controller.handlers`)."""
