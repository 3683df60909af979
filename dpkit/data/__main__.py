"""The status of every data set, yours included: list, verify or fetch them.

Its use and exit statuses: docs/getting-started.md, "The data".
"""
from __future__ import annotations

import argparse
import sys
import warnings

from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data import DataError, fetch, list_datasets, load, recipe_for, status
from dpkit.data.files import search_locations, sha256_file
from dpkit.data.registry import get_spec, registry_path
from dpkit.data.spec import is_user_dataset, user_datasets


def _shape(s) -> str:
    return "-" if s is None else f"({s[0]}, {s[1]})"


def _print_files(st: dict, show_checksum: bool) -> None:
    for f in st["files"]:
        where = f"{f['found_in']}: {f['path']}" if f["found_in"] and f["path"] else f["found_in"] or "not found"
        opt = " (optional)" if f["optional"] else ""
        ck = f"  checksum {f['checksum']}" if show_checksum and f["found_in"] else ""
        sha = "" if not f.get("sha256") else f"  sha256 {f['sha256']}" + ("" if show_checksum else f" ({f['checksum']})")
        print(f"    {f['name']}{opt}: {where}{ck}{sha}")


def _list_user(name: str) -> int:
    """One own data set's lines of ``list``; 1 if its spec or file is bad (absent, other checksum)."""
    st = status(name, load_data=False)
    title = f" {st['title']}" if st["title"] else ""
    print(f"{st['name']:5s}{title} (your own data; {st['origin'] or name})")
    _print_files(st, show_checksum=False)
    if st["message"]:
        print("    " + st["message"].replace("\n", "\n    "))
    return 1 if st["status"] in ("BAD CHECKSUM", "ERROR") else 0


def cmd_list(names: list[str]) -> int:
    print(f"registry: {registry_path()}")
    print("search order: path argument, " + ", ".join(f"{loc.label} ({loc.folder})" for loc in search_locations()) + ", download")
    bad = 0
    for code in names:
        if is_user_dataset(code):
            bad += _list_user(code)
            continue
        spec = get_spec(code)
        if spec.synthetic:
            print(f"{spec.code:5s} {spec.title} (synthetic, no files)")
            continue
        st = status(code, load_data=False)
        req = [f for f in st["files"] if not f["optional"]]
        found = sum(1 for f in req if f["found_in"])
        fallback = recipe_for(spec).fallback
        extra = f" + {fallback}" if fallback else ""
        print(f"{spec.code:5s} {spec.title}; thesis {_shape(spec.thesis_shape)}; UCI {spec.uci_id}; "
              f"required files found {found}/{len(req)}{extra}")
        _print_files(st, show_checksum=False)
    return 1 if bad else 0


def cmd_verify(names: list[str]) -> int:
    bad = 0
    print(f"{'code':5s} {'status':16s} {'ours':14s} {'thesis':14s} source")
    for code in names:
        st = status(code)
        if st.get("origin"):
            st["source"] = f"{st['source'] or ''} ({st['origin']})".strip()
        shapes = f"{_shape(st['shape']):14s} {_shape(st['thesis_shape']):14s}"
        print(f"{st['name']:5s} {st['status']:16s} {shapes} {st['source'] or ''}")
        _print_files(st, show_checksum=True)
        if st["message"]:
            print("    " + st["message"].replace("\n", "\n    "))
        failed = st["status"] in ("BAD CHECKSUM", "MALFORMED", "ERROR", "SHAPE DIFFERS")
        if failed or any(f["checksum"] == "MISMATCH" for f in st["files"]):
            bad += 1
    print("all found files verified" if not bad else f"{bad} data set(s) with corrupt files or failed loads")
    return 1 if bad else 0


def cmd_fetch(names: list[str], dest: str | None) -> int:
    failed = 0
    for code in names:
        if is_user_dataset(code):
            st = status(code, load_data=False)
            if st["status"] is None:
                print(f"{st['name']}: all files present")
                continue
            try:
                load(code)  # downloads unless $DPKIT_OFFLINE, as the registry's fetch
                print(f"{st['name']}: downloaded and verified ({st['origin']})")
            except DataError as exc:
                failed += 1
                print(f"{st['name']}: could not fetch\n    " + str(exc).replace("\n", "\n    "))
            continue
        spec = get_spec(code)
        if spec.synthetic:
            continue
        st = status(code, load_data=False)
        missing = [f["name"] for f in st["files"] if not f["found_in"]]
        if not missing:
            print(f"{spec.code}: all files present")
            continue
        try:
            got = fetch(code, dest=dest, progress=sys.stderr.isatty())
            for ff in got:
                print(f"{spec.code}: downloaded and verified {ff.path} (sha256 {ff.sha256})")
        except DataError as exc:
            failed += int(any(not f["optional"] and not f["found_in"] for f in st["files"]))
            print(f"{spec.code}: could not fetch {', '.join(missing)}\n    " + str(exc).replace("\n", "\n    "))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpkit.data", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["list", "verify", "fetch", "hash"])
    ap.add_argument("names", nargs="*", help="data set codes, spec files' paths, entry points' names (default: the "
                                              "registry's and the entry points')")
    ap.add_argument("--dest", default=None, help="fetch: download folder (default $DPKIT_DATA_DIR or <repo>/data/raw)")
    args = ap.parse_args(argv)
    try:
        if args.command == "hash":  # helper for adding a data set: sha256 and size of files
            import os

            for p in args.names:
                if not os.path.isfile(p):
                    print(f"error: {p} is not a file", file=sys.stderr)
                    return 2
                print(f"{sha256_file(p)}  {os.path.getsize(p)}  {p}")
            return 0
        names = [n if is_user_dataset(n) else get_spec(n).code for n in args.names] or list_datasets() + user_datasets()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            if args.command == "list":
                return cmd_list(names)
            if args.command == "verify":
                return cmd_verify(names)
            return cmd_fetch(names, args.dest)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
