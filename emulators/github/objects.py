"""A repository's git objects in the shared SQLite state, as dulwich sees them, and the small
API the emulator's rules (and its REST operations) use on them.

`ObjectStore` is a dulwich object store over the runtime's immutable `objects` rows (one scope
per repository): dulwich's pack negotiation, pack parsing and object parsing run over it, so
every gunicorn worker serves the same objects. `GitObjects` reads trees and blobs and writes
blobs, trees and commits with git's own SHAs; refs stay records (refs.py moves them).
"""
import hashlib
import stat
import struct
import time
import zlib
from collections import OrderedDict
from tempfile import SpooledTemporaryFile

from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, Commit, Tree, ShaFile, parse_tree, sha_to_hex
from dulwich.pack import OFS_DELTA, REF_DELTA, PackData, UnpackedObjectIterator, apply_delta

BLOB, TREE, COMMIT, TAG = Blob.type_num, Tree.type_num, Commit.type_num, 4
KIND_NAMES = {BLOB: "blob", TREE: "tree", COMMIT: "commit", TAG: "tag"}
MODES = {"100644": 0o100644, "100755": 0o100755, "040000": 0o040000, "160000": 0o160000,
         "120000": 0o120000}
_SPOOL = 16 * 1024 * 1024  # a received pack larger than this spills to a temporary file
_BATCH = 2000  # objects inserted per statement batch while a pack is unpacked
DEFAULT_PERSON = {"name": "mockingbird-user", "email": "mockingbird-user@users.noreply.example"}
# zlib level of stored objects: 0 keeps them in zlib's "stored" blocks, which a pack carries as
# well as any other, so neither a push nor a clone spends time compressing (bench/git.py
# measures both; the deltas a push brings keep the size near git's)
_LEVEL = 0
_CACHE_BYTES = 64 * 1024 * 1024  # resolved objects a store keeps (a delta chain's bases)


def _links(obj):
    if obj.type_num == COMMIT:
        return [p.decode() for p in obj.parents]
    return None


def _row(obj):
    """The stored row of an object: its data is the whole-object entry a pack carries (the
    type-and-size header, then the zlib stream), so a clone sends rows as they are."""
    raw = obj.as_raw_string()
    return obj.id.decode(), obj.type_num, _links(obj), \
        _entry_header(obj.type_num, len(raw)) + zlib.compress(raw, _LEVEL)


def _entry_header(kind, size):
    out = bytearray([(kind << 4) | (size & 15)])
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7F)
        size >>= 7
    return bytes(out)


def _parse_entry(entry):
    """Return (pack type, data offset) of a stored entry: a whole object, or a REF_DELTA whose
    20-byte base id starts the data."""
    start = 0
    while entry[start] & 0x80:
        start += 1
    return (entry[0] >> 4) & 7, start + 1


def _delta_row(sha, kind, links, base, delta):
    """A row kept as the delta a push brought: a REF_DELTA entry naming its base by id."""
    return (sha, kind, links, _entry_header(REF_DELTA, len(delta)) + base
            + zlib.compress(delta, _LEVEL))


class ObjectStore(MemoryObjectStore):
    """dulwich's object store interface over one repository's rows (`runtime.state.objects`).

    Reads keep a small per-store cache (objects never change); writes go straight to SQLite.
    """

    def __init__(self, rows):
        super().__init__()
        self.rows = rows
        self._cache = OrderedDict()  # id -> (kind, raw), least recently used first
        self._cached_bytes = 0
        self._rows = {}  # id -> (kind, entry) read ahead by prefetch, not resolved yet
        self._graph = None

    def _hex(self, sha):
        if isinstance(sha, str):
            return sha
        if len(sha) == 20:
            return sha_to_hex(sha).decode()
        if len(sha) != 40:
            raise ValueError(f"Invalid sha {sha!r}")
        return sha.decode()

    def contains_loose(self, sha):
        sha = self._hex(sha)
        return sha in self._cache or self.rows.kind(sha) is not None

    def __contains__(self, sha):
        return self.contains_loose(sha)

    def __iter__(self):
        return iter([id_.encode() for id_ in self.rows.ids()])

    def get_raw(self, name):
        sha = self._hex(name)
        found = self._cache.get(sha)
        if found is not None:
            self._cache.move_to_end(sha)
            return found
        chain = []  # deltas to apply, newest last: (id, kind, delta)
        while True:
            row = self._rows.pop(sha, None) or self.rows.get(sha)
            if row is None:
                raise KeyError(name)
            kind, entry = row
            pack_type, start = _parse_entry(entry)
            if pack_type != REF_DELTA:
                raw = zlib.decompress(entry[start:])
                break
            chain.append((sha, kind, zlib.decompress(entry[start + 20:])))
            sha = entry[start:start + 20].hex()
            cached = self._cache.get(sha)
            if cached is not None:
                raw = cached[1]
                break
        self._keep(sha, kind, raw)  # (a no-op for a base found in the cache)
        for sha, kind, delta in reversed(chain):
            raw = b"".join(apply_delta(raw, delta))
            self._keep(sha, kind, raw)
        return self._cache[self._hex(name)]

    def _keep(self, sha, kind, raw):
        if sha in self._cache:
            return
        self._cache[sha] = (kind, raw)
        self._cached_bytes += len(raw)
        while self._cached_bytes > _CACHE_BYTES and len(self._cache) > 1:
            _old, (_kind, dropped) = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)

    def __getitem__(self, name):
        kind, raw = self.get_raw(name)
        return ShaFile.from_raw_string(kind, raw)

    def prefetch(self, shas):
        """Read many objects' rows in a few queries (a pack's worth), to resolve on use."""
        wanted = [self._hex(s) for s in shas]
        self._rows.update(self.rows.get_many([s for s in wanted if s not in self._cache]))

    def graph(self):
        """Return `{commit sha: [parent shas]}` of every commit (read once per store, anew
        after a write)."""
        if self._graph is None:
            self._graph = self.rows.links(COMMIT)
        return self._graph

    def _add(self, rows):
        self._graph = None
        self.rows.add(rows)

    def add_object(self, obj):
        self._add([_row(obj)])

    def add_objects(self, objects, progress=None):
        self._add([_row(obj) for obj, _path in objects])

    def __delitem__(self, name):
        raise TypeError("git objects are immutable")

    def iter_unpacked_subset(self, shas, *, include_comp=False, allow_missing=False,
                             convert_ofs_delta=True):
        """Nothing for dulwich to reuse: `write_pack` sends stored deltas itself."""
        return iter(())

    def objects_to_send(self, finder):
        """Return the ids a dulwich `MissingObjectFinder` would yield, walking trees with the
        C tree parser and never reading a blob (the finder's own walk parses every tree
        entry in Python; this is what makes a clone fast)."""
        done = set(finder.sha_done)  # hex ids as bytes, as dulwich and the tree parser give
        todo = [sha for sha, _name, _kind, _leaf in finder.objects_to_send]
        # newest commits first, so each tree comes right after the newer version git deltas
        # it against (the resolved base is still cached: one delta applied per tree)
        self.prefetch(todo)
        todo.sort(key=self._commit_time, reverse=True)
        out = []
        while todo:  # breadth first, one query per 500 commits, trees or tags
            level, todo = [sha for sha in dict.fromkeys(todo) if sha not in done], []
            for start in range(0, len(level), 500):
                part = level[start:start + 500]
                self.prefetch(part)
                for sha in part:
                    done.add(sha)
                    out.append(sha)
                    kind, raw = self.get_raw(sha)
                    if kind == COMMIT:
                        todo.append(raw[5:45])  # "tree <hex>\n" opens every commit
                    elif kind == TREE:
                        entries = parse_tree(raw, 20)
                        todo.extend(c for _n, mode, c in entries if mode == stat.S_IFDIR)
                        # a submodule's commit (160000) lives in another repository
                        files = {c for _n, mode, c in entries
                                 if mode != stat.S_IFDIR and mode != 0o160000} - done
                        done |= files
                        out.extend(files)
                    elif kind == TAG:
                        todo.append(raw[7:47])  # "object <hex>\n"
        return out

    def _commit_time(self, sha):
        """A commit's committer time (0 for any other object), from its raw header."""
        kind, raw = self.get_raw(sha)
        if kind != COMMIT:
            return 0
        at = raw.find(b"\ncommitter ")
        line = raw[at + 1:raw.find(b"\n", at + 1)]
        parts = line.rsplit(b" ", 2)
        return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0

    def write_pack(self, write, ids, have=()):
        """Write a pack of `ids` from their stored entries, as they are (no recompression): a
        stored delta goes as it is when its base is in the pack or among `have` (the client's:
        a thin pack), else whole."""
        sending = {i.decode() if isinstance(i, bytes) else i for i in ids}
        have = {h.decode() if isinstance(h, bytes) else h for h in have}
        digest = hashlib.sha1()
        head = b"PACK" + struct.pack(">LL", 2, len(ids))
        digest.update(head)
        buffer = [head]
        size = len(head)
        for start in range(0, len(ids), 500):
            part = [i.decode() if isinstance(i, bytes) else i for i in ids[start:start + 500]]
            found = self.rows.get_many(part)
            for sha in part:
                kind, entry = found[sha]
                pack_type, start = _parse_entry(entry)
                if pack_type == REF_DELTA:
                    base = entry[start:start + 20].hex()
                    if base not in sending and base not in have:
                        raw = self.get_raw(sha)[1]
                        entry = _entry_header(kind, len(raw)) + zlib.compress(raw, _LEVEL)
                digest.update(entry)
                buffer.append(entry)
                size += len(entry)
                if size >= 1 << 20:
                    write(b"".join(buffer))
                    buffer, size = [], 0
        buffer.append(digest.digest())
        write(b"".join(buffer))

    def add_pack(self):
        """Return (file, commit, abort): the pack written to `file` is checked, then unpacked
        into rows (deltas resolved, thin-pack bases read from the store) on `commit()`."""
        spool = SpooledTemporaryFile(max_size=_SPOOL, prefix="incoming-")

        def commit():
            size = spool.tell()
            try:
                if size:
                    spool.seek(0)
                    data = PackData.from_file(spool, self.object_format, size)
                    try:
                        data.check()
                        self.unpack(data)
                    finally:
                        data.close()
            finally:
                spool.close()
        return spool, commit, spool.close

    def unpack(self, data):
        """Store every object of a dulwich `PackData` (a delta stays a delta against its base,
        in the pack or, for a thin pack, in the store: git chose them well); return how many.
        Objects are hashed, not parsed: only a commit's parents are read, for the graph."""
        batch, count, at = [], 0, {}  # at: pack offset -> binary id (bases come first)
        for unpacked in UnpackedObjectIterator.for_pack_data(data, self.get_raw):
            raw = b"".join(unpacked.obj_chunks)
            kind, sha = unpacked.obj_type_num, unpacked.sha()
            at[unpacked.offset] = sha
            links = _parents(raw) if kind == COMMIT else None
            if unpacked.pack_type_num == OFS_DELTA:
                batch.append(_delta_row(sha.hex(), kind, links,
                                        at[unpacked.offset - unpacked.delta_base],
                                        b"".join(unpacked.decomp_chunks)))
            elif unpacked.pack_type_num == REF_DELTA:
                batch.append(_delta_row(sha.hex(), kind, links, unpacked.delta_base,
                                        b"".join(unpacked.decomp_chunks)))
            else:
                batch.append((sha.hex(), kind, links,
                              _entry_header(kind, len(raw)) + zlib.compress(raw, _LEVEL)))
            count += 1
            if len(batch) >= _BATCH:
                self._add(batch)
                batch = []
        self._add(batch)
        return count


def _parents(raw):
    """The parent ids of a raw commit (its header lines, before the first blank line)."""
    head = raw.split(b"\n\n", 1)[0]
    return [line[7:47].decode() for line in head.split(b"\n") if line.startswith(b"parent ")]


class GitObjects:
    """Read and write one repository's objects: the emulator's object layer.

    Every SHA is git's own (a blob written here has the id `git hash-object` gives it). Writes
    are immutable rows; pointing a ref at a commit is `RefRules.write` (models/refs.py).
    """

    def __init__(self, rows, *, now_s=time.time):
        self.store = ObjectStore(rows)
        self.now_s = now_s  # the namespace clock: a commit written without a date is "now"

    # reading ------------------------------------------------------------------------------
    def kind(self, sha):
        """Return "blob", "tree", "commit" or "tag" for an existing object, else None."""
        return KIND_NAMES.get(self.store.rows.kind(sha))

    def object(self, sha):
        """Return the dulwich object (Blob, Tree, Commit, Tag), or None."""
        try:
            return self.store[sha]
        except KeyError:
            return None

    def commit(self, sha):
        """Return the dulwich Commit `sha`, or None when it is not a commit here."""
        obj = self.object(sha)
        return obj if isinstance(obj, Commit) else None

    def blob(self, sha):
        """Return a blob's bytes, or None."""
        obj = self.object(sha)
        return obj.as_raw_string() if isinstance(obj, Blob) else None

    def tree_of(self, sha):
        """Return the tree SHA of a commit or tree `sha`, or None."""
        obj = self.object(sha)
        if isinstance(obj, Commit):
            return obj.tree.decode()
        return sha if isinstance(obj, Tree) else None

    def entries(self, tree_sha, *, recursive=False, prefix=""):
        """Return a tree's entries `[{path, mode, type, sha}]` in git's order (paths below
        the tree; with `recursive`, subtrees' entries follow each subtree)."""
        tree = self.object(tree_sha)
        if not isinstance(tree, Tree):
            return []
        out = []
        for item in tree.iteritems():
            path = prefix + item.path.decode("utf-8", "surrogateescape")
            kind = _entry_type(item.mode)
            out.append({"path": path, "mode": f"{item.mode:06o}", "type": kind,
                        "sha": item.sha.decode()})
            if recursive and kind == "tree":
                out.extend(self.entries(item.sha.decode(), recursive=True, prefix=path + "/"))
        return out

    def files(self, tree_sha):
        """Return `{path: (mode, sha)}` of every file (blob or link) under a tree."""
        return {e["path"]: (e["mode"], e["sha"]) for e in self.entries(tree_sha, recursive=True)
                if e["type"] != "tree"}

    def lookup(self, tree_sha, path):
        """Return the entry `{path, mode, type, sha}` at `path` under a tree ("" is the tree
        itself), or None."""
        entry = {"path": "", "mode": "040000", "type": "tree", "sha": tree_sha}
        for part in [p for p in path.split("/") if p]:
            if entry["type"] != "tree":
                return None
            found = [e for e in self.entries(entry["sha"]) if e["path"] == part]
            if not found:
                return None
            entry = {**found[0], "path": (entry["path"] + "/" if entry["path"] else "") + part}
        return entry

    def changes(self, old_tree, new_tree):
        """Return the file changes between two trees (`old_tree` None: everything is added):
        `[{filename, status, old_sha, new_sha, old_mode, new_mode}]`, status `added`,
        `removed` or `modified`, sorted by path."""
        out = []
        for change in self.store.tree_changes(old_tree and old_tree.encode(),
                                              new_tree.encode()):
            (old_path, new_path), (old_mode, new_mode), (old_sha, new_sha) = change
            status = "added" if old_path is None else "removed" if new_path is None \
                else "modified"
            out.append({"filename": (new_path or old_path).decode("utf-8", "surrogateescape"),
                        "status": status,
                        "old_sha": old_sha and old_sha.decode(),
                        "new_sha": new_sha and new_sha.decode(),
                        "old_mode": old_mode and f"{old_mode:06o}",
                        "new_mode": new_mode and f"{new_mode:06o}"})
        return sorted(out, key=lambda c: c["filename"])

    def graph(self):
        """Return `{commit sha: [parent shas]}` of every commit of the repository."""
        return self.store.graph()

    # writing ------------------------------------------------------------------------------
    def write_blob(self, data):
        """Store bytes as a blob; return its SHA."""
        blob = Blob.from_string(bytes(data))
        self.store.add_object(blob)
        return blob.id.decode()

    def write_tree(self, entries, base_tree=None):
        """Store a tree built from `entries` over `base_tree`; return its SHA.

        Each entry is `{path, mode, type?, sha}` (a path may name subfolders: `a/b/c.txt`) or
        `{path, content}` (a blob written on the way); `sha: None` deletes the path.
        """
        files = {}
        if base_tree:
            files = {path: (mode, sha) for path, (mode, sha) in self.files(base_tree).items()}
        for entry in entries:
            path = entry["path"].strip("/")
            if "content" in entry and entry["content"] is not None:
                content = entry["content"]
                sha = self.write_blob(content.encode() if isinstance(content, str) else content)
            else:
                sha = entry.get("sha")
            if sha is None:
                files = {p: v for p, v in files.items()
                         if p != path and not p.startswith(path + "/")}
                continue
            mode = entry.get("mode", "100644")
            if mode == "040000":  # a subtree: its files replace what the path held
                files = {p: v for p, v in files.items()
                         if p != path and not p.startswith(path + "/")}
                for sub, value in self.files(sha).items():
                    files[f"{path}/{sub}"] = value
                continue
            files = {p: v for p, v in files.items() if not p.startswith(path + "/")}
            files[path] = (mode, sha)
        return self._build(files)

    def _build(self, files):
        """Store the trees of `{path: (mode, sha)}`; return the root tree's SHA."""
        root = {}
        for path, (mode, sha) in files.items():
            node = root
            parts = path.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    raise ValueError(f"{path}: a file is in the way")
            node[parts[-1]] = (mode, sha)
        written = []

        def build(node):
            tree = Tree()
            for name, value in node.items():
                if isinstance(value, dict):
                    tree.add(name.encode(), stat.S_IFDIR, build(value).encode())
                else:
                    tree.add(name.encode(), MODES.get(value[0], int(value[0], 8)),
                             value[1].encode())
            written.append(tree)
            return tree.id.decode()
        sha = build(root)
        self.store.add_objects([(t, None) for t in written])
        return sha

    def write_commit(self, tree, parents, message, *, author=None, committer=None):
        """Store a commit; `author`/`committer` are `{name, email, date}` (date: epoch
        seconds, default now; committer defaults to author). Return its SHA."""
        author = author or DEFAULT_PERSON
        committer = committer or author
        commit = Commit()
        commit.tree = tree.encode()
        commit.parents = [p.encode() for p in parents]
        for role, times, person in (("author", "author", author),
                                    ("committer", "commit", committer)):
            setattr(commit, role, f"{person['name']} <{person['email']}>".encode())
            setattr(commit, f"{times}_time", int(person.get("date") or self.now_s()))
            setattr(commit, f"{times}_timezone", int(person.get("tz", 0)))
        commit.message = message.encode() if isinstance(message, str) else message
        self.store.add_object(commit)
        return commit.id.decode()


def _entry_type(mode):
    if stat.S_ISDIR(mode):
        return "tree"
    if mode == 0o160000:
        return "commit"
    return "blob"
