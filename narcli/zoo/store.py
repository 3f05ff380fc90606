"""The zoo: read-only access to the bundled architecture database and the user's own zoo.

Reads use only the standard library, so `nar zoo show` and friends never import torch.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import json
import os
import sqlite3
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli import DATA_DIR
from narcli.errors import UsageError, ZooError, shorten
from narcli.scan import sqlite_files
from narcli.zoo.vectors import HALF_MARK, checked_vector, pack_vector, unpack_vector  # noqa: F401 - re-exported

SCHEMA_VERSION = 1
BUNDLED = DATA_DIR / "zoo.db"

SCHEMA = """
create table if not exists meta (key text primary key, value text);
create table if not exists sources (
    name text primary key, prefix text, rank integer, description text, version text, bundled integer);
create table if not exists models (
    id text primary key, source text not null, name text not null collate nocase,
    family text, source_family text, coarse text, task text, labelled_by text,
    status text not null, reason text, message text,
    graph_hash text, params integer, macs integer, nodes integer, edges integer, depth integer,
    tracer text, inputs text, top_ops text, seconds real, built_at text);
create index if not exists models_name on models(name);
create index if not exists models_hash on models(graph_hash);
create index if not exists models_family on models(family);
create table if not exists graphs (hash text primary key, data blob not null);
-- a model's own trace when its architecture's graph (above) was traced at another model's input
create table if not exists model_graphs (id text primary key, data blob not null);
create table if not exists embeddings (hash text primary key, encoder text not null, vector blob not null);
create table if not exists annotations (hash text primary key, encoder text not null, prediction text, motifs text);
create table if not exists signatures (
    id text primary key, tensors integer, sketch blob, data blob, name_sketch blob);
create table if not exists builds (
    id integer primary key, started text, finished text, sources text, options text, summary text);
"""


def bundled_zoo_path() -> Path:
    """The zoo shipped with nar (`$NAR_ZOO` overrides it)."""
    return Path(os.environ["NAR_ZOO"]).expanduser() if os.environ.get("NAR_ZOO") else BUNDLED


def user_zoo_path() -> Path:
    """The user's own zoo, written by `nar zoo build` (extra sources, NAS spaces)."""
    from narcli.scan.cache import nar_home

    return nar_home() / "zoo.db"


def rebuild_hint(path: Path) -> str:
    if path == BUNDLED:
        return "reinstall nar, or rebuild it with `nar zoo build --db " + str(path) + "`"
    if Path(path) == user_zoo_path():
        return f"run `nar cache clear -y` to repair it (a damaged file is set aside), or rebuild it with " \
               f"`nar zoo build --db {path}`"
    return f"rebuild it with `nar zoo build --db {path}`"


MAX_NAME = 300  # characters; the longest zoo id is under 100


@dataclass
class ZooModel:
    """One model of the zoo, as recorded by `nar zoo build`."""

    id: str
    source: str
    name: str
    family: str
    source_family: str
    coarse: str
    task: str
    labelled_by: str
    status: str
    reason: str | None
    message: str | None
    graph_hash: str | None
    params: int | None
    macs: int | None
    nodes: int | None
    edges: int | None
    depth: int | None
    tracer: str | None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    top_ops: list[list[Any]] = field(default_factory=list)
    seconds: float | None = None
    built_at: str | None = None
    db: str = ""

    @classmethod
    def from_row(cls, row: sqlite3.Row, db: Path) -> ZooModel:
        data = dict(row)
        data["inputs"] = sqlite_files.decoded(json.loads, data["inputs"] or "[]")
        data["top_ops"] = sqlite_files.decoded(json.loads, data["top_ops"] or "[]")
        return cls(**data, db=str(db))

    def to_record(self) -> Any:
        """The model as a scan record, so `nar scan NAME` reads like a scan of a file."""
        from narcli.scan.cache import ModelRecord

        return ModelRecord(self.id, f"zoo ({self.db})", "zoo", self.tracer or "", self.inputs, None,
                           self.params or 0, self.macs or 0, self.depth or 0, self.nodes or 0, self.edges or 0,
                           self.graph_hash or "", [tuple(p) for p in self.top_ops], self.seconds or 0.0,
                           cached=True, id=self.id, graph_key=self.graph_hash or "")

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data.pop("db")
        return data


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to the zoo at `path`; ZooError (with how to rebuild) if unusable."""
    if not path.exists():
        raise ZooError(f"zoo database {path} is missing; {rebuild_hint(path)}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        conn.row_factory = sqlite3.Row
        version = conn.execute("select value from meta where key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ZooError(f"zoo database {path} is unreadable (damaged: {exc}); {rebuild_hint(path)}") from None
    if version is None or int(version[0]) != SCHEMA_VERSION:
        conn.close()
        raise ZooError(f"zoo database {path} has schema {version[0] if version else 'none'}, "
                       f"nar reads {SCHEMA_VERSION}; {rebuild_hint(path)}")
    return conn


def _guarded(method: Any) -> Any:
    """Damaged pages or values as one ZooError naming the file (the one quick check faults) and the fix."""
    @functools.wraps(method)
    def wrapper(self: Zoo, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, sqlite_files.BadBlob) as exc:
            states = [(path, sqlite_files.health(path, ("models", "graphs"))) for path in reversed(self.paths)]
            path, state = next(((p, s) for p, s in states if s != "ok"), (self.paths[-1], " ".join(str(exc).split())))
            raise ZooError(f"zoo database {path} is damaged ({state[:200]}); {rebuild_hint(path)}") from None

    return wrapper


class Zoo:
    """The bundled zoo plus the user's zoo (when it exists); the user's records win on equal ids."""

    def __init__(self, paths: list[Path] | None = None):
        if paths is None:
            paths = [bundled_zoo_path()]
            if user_zoo_path().exists():
                paths.append(user_zoo_path())
        self.paths = [Path(p) for p in paths]
        self._conns: list[tuple[Path, sqlite3.Connection]] | None = None
        self._ranks: dict[str, int] | None = None
        self._family_sizes: dict[str, int] | None = None

    def _connections(self) -> list[tuple[Path, sqlite3.Connection]]:
        if self._conns is None:
            self._conns = [(path, open_readonly(path)) for path in self.paths]
        return self._conns

    def close(self) -> None:
        for _, conn in self._conns or []:
            conn.close()
        self._conns = None

    def __enter__(self) -> Zoo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, sql: str, params: tuple = ()) -> list[ZooModel]:
        found: dict[str, ZooModel] = {}
        for path, conn in self._connections():
            try:
                for row in conn.execute(sql, params):
                    found[row["id"]] = ZooModel.from_row(row, path)
            except (sqlite3.DatabaseError, sqlite_files.BadBlob) as exc:
                raise ZooError(f"zoo database {path} is damaged ({exc}); {rebuild_hint(path)}") from None
        return sorted(found.values(), key=lambda m: (self.rank(m.source), m.id))

    def ranks(self) -> dict[str, int]:
        return self._per_source("rank")

    def versions(self) -> dict[str, str]:
        """Each source's library version the zoo's rows were built with ('' where none was recorded)."""
        return {name: version or "" for name, version in self._per_source("version").items()}

    def _per_source(self, column: str) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for _, conn in self._connections():
            values.update(conn.execute(f"select name, {column} from sources").fetchall())
        return values

    def rank(self, source: str) -> int:
        """Lower ranks win when a bare name is in several sources."""
        if self._ranks is None:
            self._ranks = self.ranks()
        return self._ranks.get(source, 100)

    # -- queries ---------------------------------------------------------------------------------
    def models(self, pattern: str | None = None, *, family: str | None = None, source: str | None = None,
               task: str | None = None, coarse: str | None = None, failed: bool = False) -> list[ZooModel]:
        """Models that traced (or, with `failed`, that did not), filtered; `pattern` is a glob on ids."""
        clauses, params = ["status = ?"], ["failed" if failed else "ok"]
        for column, value in (("family", family), ("source", source), ("task", task), ("coarse", coarse)):
            if value:
                clauses.append(f"{column} = ? collate nocase")
                params.append(value)
        models = self._query(f"select * from models where {' and '.join(clauses)}", tuple(params))
        if pattern and len(pattern) > MAX_NAME:
            raise UsageError(f"pattern {shorten(pattern)!r} is {len(pattern):,} characters; zoo ids are under "
                             f"{MAX_NAME}")
        if pattern:
            pattern = pattern.lower()
            models = [m for m in models if fnmatch.fnmatchcase(m.id.lower(), pattern)
                      or fnmatch.fnmatchcase(m.name.lower(), pattern)]
        return models

    def resolve(self, name: str) -> ZooModel:
        """The model `name` means: an exact id, else an exact name (best-ranked source), else a
        unique prefix. ZooError lists candidates for ambiguous names and close names for unknown ones."""
        key = name.strip().lower()
        if not key:
            raise UsageError("empty model name")
        exact = self._query("select * from models where lower(id) = ? or name = ?", (key, key))
        by_id = [m for m in exact if m.id.lower() == key]
        for group in (by_id, exact):
            ok = [m for m in group if m.status == "ok"]
            if ok:
                return min(ok, key=lambda m: (self.rank(m.source), m.id))
            if group:
                m = group[0]
                raise ZooError(f"{m.id} is in the zoo but failed to build ({m.reason}: {m.message})")
        if len(key) > MAX_NAME:  # longer than any id; SQLite refuses LIKE patterns this long anyway
            raise ZooError(f"no model {shorten(name)!r} in the zoo ({len(name):,} characters; see `nar zoo list`)")
        like = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        prefixed = self._query("select * from models where status = 'ok' and "
                               "(lower(id) like ? escape '\\' or lower(name) like ? escape '\\')", (like, like))
        if len({m.name.lower() for m in prefixed}) == 1:  # one name, maybe in several sources
            return min(prefixed, key=lambda m: (self.rank(m.source), m.id))
        if prefixed:
            shown = ", ".join(m.id for m in prefixed[:8])
            more = f" and {len(prefixed) - 8} more" if len(prefixed) > 8 else ""
            raise ZooError(f"{shorten(name)!r} is ambiguous: {shown}{more}")
        close = difflib.get_close_matches(key, self._all_names(), n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `nar zoo list`"
        raise ZooError(f"no model {shorten(name)!r} in the zoo{hint}")

    def _all_names(self) -> list[str]:
        names: set[str] = set()
        for _, conn in self._connections():
            for model_id, short in conn.execute("select id, name from models where status = 'ok'"):
                names.update((model_id.lower(), short.lower()))
        return sorted(names)

    def aliases(self, model: ZooModel) -> list[str]:
        """Other models with the same architecture (same graph hash)."""
        if not model.graph_hash:
            return []
        same = self._query("select * from models where graph_hash = ? and status = 'ok'", (model.graph_hash,))
        return [m.id for m in same if m.id != model.id]

    def graph_blob(self, graph_hash: str) -> bytes:
        """The stored (zlib-compressed JSON) graph with this hash."""
        for path, conn in self._connections():
            row = conn.execute("select data from graphs where hash = ?", (graph_hash,)).fetchone()
            if row is not None:
                return row[0]
        raise ZooError(f"graph {graph_hash} is missing from the zoo; {rebuild_hint(self.paths[0])}")

    def embeddings(self) -> tuple[list[str], list[bytes], set[str]]:
        """(graph hashes, float32 vectors as bytes, encoder ids) stored by `nar zoo embed`."""
        hashes, vectors, encoders = [], [], set()
        seen = set()
        for _, conn in reversed(self._connections()):  # the user's zoo wins on equal hashes
            try:
                rows = conn.execute("select hash, encoder, vector from embeddings").fetchall()
            except sqlite3.OperationalError:  # a zoo built before embeddings existed
                continue
            for graph_hash, encoder, vector in rows:
                if graph_hash not in seen:
                    seen.add(graph_hash)
                    hashes.append(graph_hash)
                    vectors.append(sqlite_files.decoded(checked_vector, vector))
                    encoders.add(encoder)
        return hashes, vectors, encoders

    def embedding(self, graph_hash: str) -> tuple[bytes, str] | None:
        """(float32 vector as bytes, encoder id) stored for one graph, or None."""
        for _, conn in reversed(self._connections()):
            try:
                row = conn.execute("select vector, encoder from embeddings where hash = ?", (graph_hash,)).fetchone()
            except sqlite3.OperationalError:
                continue
            if row is not None:
                return sqlite_files.decoded(checked_vector, row[0]), row[1]
        return None

    def embedding_fingerprint(self) -> str:
        """A digest of which graphs have embeddings from which encoder (an index built from the
        same embeddings has the same fingerprint)."""
        import hashlib

        digest = hashlib.sha256()
        for _, conn in self._connections():
            try:
                rows = conn.execute("select hash, encoder from embeddings order by hash").fetchall()
            except sqlite3.OperationalError:
                continue
            for graph_hash, encoder in rows:
                digest.update(f"{graph_hash} {encoder}\n".encode())
        return digest.hexdigest()[:16]

    def annotations(self, hashes: list[str]) -> dict[str, dict[str, Any]]:
        """Per graph hash: the encoder's family prediction and the graph's repeated motifs, as
        stored by `nar zoo embed` (so `nar similar NAME` needs neither torch nor the graphs)."""
        found: dict[str, dict[str, Any]] = {}
        marks = ",".join("?" * len(hashes))
        for _, conn in self._connections():
            try:
                rows = conn.execute(f"select hash, encoder, prediction, motifs from annotations where hash in ({marks})",
                                    tuple(hashes)).fetchall()
            except sqlite3.OperationalError:  # a zoo embedded before annotations existed
                continue
            for graph_hash, encoder, prediction, motifs in rows:
                found[graph_hash] = {"encoder": encoder,
                                     "prediction": sqlite_files.decoded(json.loads, prediction or "null"),
                                     "motifs": sqlite_files.decoded(json.loads, motifs or "[]")}
        return found

    def models_by_hash(self, hashes: list[str]) -> dict[str, list[ZooModel]]:
        """The models of each graph hash, best-ranked source first, then the most common family:
        an architecture several families share (GPT-2 and GPT-SW3) is named after the larger one;
        of two as common, after the one fewer steps from its design's root (`zoo.lineage`: Mistral,
        derived from Llama, before Ministral, derived from Qwen2)."""
        out: dict[str, list[ZooModel]] = {}
        for start in range(0, len(hashes), 500):
            chunk = hashes[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for m in self._query(f"select * from models where status = 'ok' and graph_hash in ({marks})", tuple(chunk)):
                out.setdefault(m.graph_hash, []).append(m)
        for group in out.values():
            group.sort(key=self.naming_key)
        return out

    def sources_by_hash(self, hashes: list[str]) -> dict[str, frozenset[str]]:
        """The zoo sources that list each graph hash (a hash no source lists is left out)."""
        return {h: frozenset(m.source for m in models) for h, models in self.models_by_hash(hashes).items()}

    def naming_key(self, model: ZooModel) -> tuple:
        """Sort key of the models sharing a graph, the one it is named after first (`models_by_hash`)."""
        from narcli.zoo.lineage import lineage_depth

        return self.rank(model.source), -self.family_sizes().get(model.family, 0), lineage_depth(model.family), model.id

    def family_sizes(self) -> dict[str, int]:
        """Models per family (traced ones), over every zoo."""
        if self._family_sizes is None:
            sizes: dict[str, int] = {}
            for _, conn in self._connections():
                for family, count in conn.execute("select family, count(*) from models where status = 'ok' "
                                                  "group by family"):
                    sizes[family] = sizes.get(family, 0) + count
            self._family_sizes = sizes
        return self._family_sizes

    def graph(self, model: ZooModel) -> Any:
        """The model's canonical ArchGraph, as traced at its own input (its shapes, sizes, MACs)."""
        from narcli.graph.arch_graph import ArchGraph

        for path, conn in self._connections():
            row = None
            if model.db in ("", str(path)):
                try:
                    row = conn.execute("select data from model_graphs where id = ?", (model.id,)).fetchone()
                except sqlite3.OperationalError:  # a zoo from before own graphs
                    row = None
            row = row or conn.execute("select data from graphs where hash = ?", (model.graph_hash,)).fetchone()
            if row is not None:
                try:
                    return sqlite_files.decoded(lambda data: ArchGraph.from_json(zlib.decompress(data).decode()), row[0])
                except sqlite_files.BadBlob as exc:
                    raise ZooError(f"zoo database {path} is damaged (the graph of {model.id} cannot be decoded: "
                                   f"{exc}); {rebuild_hint(path)}") from None
        raise ZooError(f"the graph of {model.id} is missing from the zoo; {rebuild_hint(self.paths[0])}")

    def families(self, source: str | None = None) -> list[dict[str, Any]]:
        """Each family with its coarse class, model count, distinct architectures and sources."""
        groups: dict[str, dict[str, Any]] = {}
        for m in self.models(source=source):
            g = groups.setdefault(m.family, {"family": m.family, "coarse": Counter(), "models": 0,
                                             "hashes": set(), "sources": Counter()})
            g["coarse"][m.coarse] += 1
            g["models"] += 1
            g["hashes"].add(m.graph_hash)
            g["sources"][m.source] += 1
        out = []
        for g in groups.values():
            out.append({"family": g["family"], "coarse": g["coarse"].most_common(1)[0][0],
                        "models": g["models"], "architectures": len(g["hashes"]),
                        "sources": sorted(g["sources"])})
        return sorted(out, key=lambda g: (-g["models"], g["family"]))

    def stats(self) -> dict[str, Any]:
        """Counts by source (models, distinct architectures, failures), coarse class and task."""
        ok = self.models()
        failed = self.models(failed=True)
        skipped = self._query("select * from models where status = 'skipped'")
        by_source: dict[str, dict[str, Any]] = {}
        for m in ok + failed:
            s = by_source.setdefault(m.source, {"models": 0, "architectures": set(), "failed": 0, "skipped": 0,
                                                "reasons": Counter()})
            if m.status == "ok":
                s["models"] += 1
                s["architectures"].add(m.graph_hash)
            else:
                s["failed"] += 1
                s["reasons"][m.reason] += 1
        for m in skipped:
            if m.source in by_source:
                by_source[m.source]["skipped"] += 1
        for s in by_source.values():
            s["architectures"] = len(s["architectures"])
            s["reasons"] = dict(s["reasons"].most_common())
        return {"models": len(ok), "architectures": len({m.graph_hash for m in ok}), "failed": len(failed),
                "skipped": len(skipped),
                "sources": by_source, "coarse": dict(Counter(m.coarse for m in ok).most_common()),
                "tasks": dict(Counter(m.task for m in ok).most_common())}


for _name in ("ranks", "models", "resolve", "_all_names", "aliases", "graph_blob", "embeddings", "embedding",
              "embedding_fingerprint", "annotations", "models_by_hash", "family_sizes", "graph", "families", "stats"):
    setattr(Zoo, _name, _guarded(getattr(Zoo, _name)))
