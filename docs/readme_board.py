"""Write the README's leaderboard block from the leaderboard's records file.

::

    python docs/readme_board.py                       # data/leaderboard/records.parquet -> README.md's block
    python docs/readme_board.py --records FILE --check   # exit 1 if the block differs from FILE's board

The block between ``<!-- board:begin ... -->`` and ``<!-- board:end -->`` is the headline
(:func:`dpkit.board.report.headline`), the board's summary table
(:func:`dpkit.board.report.summary_markdown`, the absolute errors and the winner sets' sizes: the
README stays a front page; the relative errors and the sets' members are in the docs' results), the text the
assembler writes into ``leaderboard_headline.md`` and
``leaderboard_summary.md``, and the sentence saying in how many cells a best method is certified on the whole query
class (:func:`dpkit.board.certified.certified_sentence`): never typed by hand. Exit codes: 0 written (or, with
``--check``, up to date); 1 ``--check`` found the block out of date; 2 the records file, the ``provenance.json`` beside
it or the block is missing, or the records file is not a valid board (one line naming it; nothing is written). The
block ends with the provenance's line (:func:`dpkit.board.records.provenance_line`): date, commit, runs,
compute and machine.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def board_block(records: Path) -> str:
    """The block's text for the board of ``records``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("dpkit_docs_build", HERE / "build.py")
    build = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = build
    spec.loader.exec_module(build)  # docs/build.py: the one reader of the records file
    from dpkit.board.certified import certified_cells, certified_sentence
    from dpkit.board.records import provenance_line
    from dpkit.board.report import headline, summary_markdown

    df = build.read_records(records)
    _rows, board = build.board_of(df)
    return (f"{headline(board).text()}\n\n{summary_markdown(board, kinds=('abs',), names=0)}\n\n"
            f"{certified_sentence(certified_cells(df))}\n\n{provenance_line(records)}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python docs/readme_board.py", description=__doc__.split("\n\n")[0])
    from dpkit.core.settings import setting

    default = setting("DPKIT_BOARD_RECORDS") or str(ROOT / "data" / "leaderboard" / "records.parquet")
    ap.add_argument("--records", type=Path, default=Path(default), help="the records file ($DPKIT_BOARD_RECORDS)")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 if the block is out of date")
    args = ap.parse_args(argv)
    if not args.records.is_file():
        print(f"readme_board: no records file {args.records} (make leaderboard writes it)", file=sys.stderr)
        return 2
    from dpkit.board.records import BoardFileError, InvalidRecordsError
    from dpkit.core.marked import MarkedBlockError, read_marked, write_marked

    try:
        current = read_marked(args.readme, "board")
    except MarkedBlockError as exc:
        print(f"readme_board: {exc}", file=sys.stderr)
        return 2

    try:
        block = board_block(args.records)
    except (BoardFileError, InvalidRecordsError) as exc:  # an invalid records file; a board without its provenance
        print(f"readme_board: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if current != block:
            print(f"readme_board: the board block of {args.readme} differs from {args.records}'s board", file=sys.stderr)
            return 1
        return 0
    write_marked(args.readme, "board", block)
    print(f"readme_board: {args.readme} updated from {args.records}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
