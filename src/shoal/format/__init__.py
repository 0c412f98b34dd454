"""The Paimon format as values: types, schema, snapshot, manifests, binary rows.

Nothing here does I/O; codecs turn values into bytes and back.
"""
