"""The reference's deterministic node ids."""
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _fnv1a(text):
    # reference `opaqueToken`: 32-bit FNV-1a over UTF-16 code units, then a murmur-style finaliser
    h = 0x811C9DC5
    data = text.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    return h ^ (h >> 13)


def node_id(salt, prefix, n):
    """Return the reference's deterministic node id `<prefix><14 base-62 chars>` for counter n."""
    out, round_ = [], 0
    while len(out) < 14:
        h = _fnv1a(f"{salt}:{prefix}:{n}:{round_}")
        for _ in range(5):
            if len(out) == 14:
                break
            out.append(_ALPHABET[h % 62])
            h //= 62
        round_ += 1
    return prefix + "".join(out)
