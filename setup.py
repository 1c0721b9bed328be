"""The compiled part of lakegraph; everything else is declared in pyproject.toml.

One C extension, ``pipelines._kernels``: the string index's kernels (terms hashed straight from
their Arrow buffers, hash tables probed and filled), each run without the GIL
(:mod:`pipelines.string_index`). Declared here because setuptools still calls its
``pyproject.toml`` form of extension modules experimental.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("pipelines._kernels", ["pipelines/_kernels.c"], extra_compile_args=["-O3"])])
