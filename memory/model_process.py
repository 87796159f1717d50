"""The embedding model in a process of its own, started when vectors are asked for and stopped when idle.

`python -m memory.model_process --fd N MODEL TOKENIZER` loads the ONNX graph and answers on the socket it
inherited (fd N): a JSON list of texts in, float32 bytes out (one 384-dim row per text), until the other end
closes it. No Django here: the process holds the model (~155 MB) and nothing else, so the process that owns
it (memory.embeddings.ModelHost) can give all of it back by ending the process, which a long-lived process
that only freed the session could not (its allocator keeps what it once held).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from multiprocessing.connection import Connection
from pathlib import Path

READY = b"ready"


def serve(conn: Connection, model: Path, tokenizer: Path) -> None:
    """Load the model, say READY, then answer until the owner closes the connection."""
    import numpy as np

    from memory.minilm_onnx import Encoder

    encoder = Encoder(model, tokenizer)
    conn.send_bytes(READY)
    while True:
        try:
            texts = json.loads(conn.recv_bytes())
        except EOFError:
            return  # the owner closed the connection: stop and give the memory back
        try:
            vectors = (
                encoder.encode([str(t) for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)
            )
            conn.send_bytes(b"v" + np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        except Exception as error:  # a bad request answers an error, the next one is served
            conn.send_bytes(b"!" + f"{type(error).__name__}: {error}".encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("model", type=Path)
    parser.add_argument("tokenizer", type=Path)
    args = parser.parse_args()
    sock = socket.socket(fileno=args.fd)
    try:
        serve(Connection(sock.detach()), args.model, args.tokenizer)
    except KeyboardInterrupt:
        pass  # Ctrl-C on `make run` reaches the whole process group; the owner stops too
    sys.exit(0)


if __name__ == "__main__":
    main()
