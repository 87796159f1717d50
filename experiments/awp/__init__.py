"""Pure readers of AWP folders: layout detection, JSONL tailing, digest hashing, file → event mapping.

No Django here: paths and bytes in, plain dataclasses out (see experiments/importer.py for the service).
"""
