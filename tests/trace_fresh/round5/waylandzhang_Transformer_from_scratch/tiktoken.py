"""Stub (ours, not upstream) for tiktoken, which is not installed here: get_encoding(...) returns a byte-level
encoding (one token per UTF-8 byte, IDs 0–255), so the notebook's vocabulary is max byte + 1 instead of cl100k's
100k: the model is the same, only its vocabulary is small."""


class _ByteEncoding:
    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(int(i) % 256 for i in ids).decode("utf-8", errors="replace")


def get_encoding(name):
    return _ByteEncoding()
