"""Plugins: how they are found by name, and how they run (inline, or isolated in a worker process).

Replica placers (:mod:`controller.placement`) and election policies (:mod:`controller.election`) are
both plugins of this kind; each declares a :class:`~controller.plugins.loader.PluginKind`.
"""
