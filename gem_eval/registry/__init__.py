"""Datasets by name and version (``terminal-bench@2.0``), from a registry in Harbor's format.

A registry is a JSON list of datasets, each naming its tasks' git repository, commit and
path (:mod:`gem_eval.registry.index`). Where it is read from is
:mod:`gem_eval.registry.source`: ``--registry``, else ``$GEM_EVAL_REGISTRY``, else
Harbor's. A dataset's tasks are checked out of git (:mod:`gem_eval.registry.checkout`)
once, into gem-eval's cache, at the commit the registry pins
(:mod:`gem_eval.registry.fetch`); a later use reads the cache and runs no git.

::

    from gem_eval.registry.fetch import fetch_dataset
    fetched = fetch_dataset("terminal-bench@2.0", registry="registry.json")
    fetched.root  # the tasks, checked out at their repository paths
    fetched.pin()  # name, version, registry, each repository's URL and commit

This package is kept light to import (no pydantic here): the command line reads its
default from :mod:`gem_eval.registry.source`.
"""
