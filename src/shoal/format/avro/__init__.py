"""Avro object container files, the encoding of manifests and manifest lists: the
container format (``container``), codecs compiled from each schema (``compiled``), block
compression (``compression``) and a search of encoded records for known strings
(``strings``)."""

from shoal.format.avro import compiled, compression, container, strings

__all__ = ["compiled", "compression", "container", "strings"]
