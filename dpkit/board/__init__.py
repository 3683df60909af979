"""The leaderboard: its records, its statistics, its report, board-add and the entrants from anywhere.

* :mod:`dpkit.board.records`: the records table, its one validator, its readers and writers, the published board;
* :mod:`dpkit.board.statistics`: intervals, sign tests, winner sets, the coverage study, paired comparisons;
* :mod:`dpkit.board.report`: the board's methods, its rows, headline, tables and texts;
* :mod:`dpkit.board.entrants`: methods named by import path or entry point, checked against the protocol;
* :mod:`dpkit.board.add`: board-add, one entrant paired with a stored board and ranked (:func:`board_add`);
* :mod:`dpkit.board.refresh`: board-refresh, named methods run again with the current code, the others verified to
  the bit (:func:`refresh_records`).

The batch runner's side of the board is in :mod:`dpkit.batch.board_files` and :mod:`dpkit.batch.own_board`.
"""
from __future__ import annotations

from dpkit.board.add import BoardAddResult, EntrantRefusedError, board_add, outcome_text, rank_entrant, ranks_text
from dpkit.board.entrants import BudgetViolationError, EntrantError
from dpkit.board.records import (
    PUBLISHED,
    BoardFileError,
    InvalidRecordsError,
    check_records,
    read_board,
    read_records,
    records_frame,
    write_records,
)
from dpkit.board.refresh import RefreshRefusedError, refresh_records
from dpkit.board.report import (
    BOARD_CAPTION,
    board_from_records,
    board_methods,
    headline,
    leaderboard_rows,
    lost_cells_text,
    method_rows,
    summary_markdown,
)
from dpkit.board.statistics import DEFAULT_BUDGET

__all__ = ["BOARD_CAPTION", "DEFAULT_BUDGET", "PUBLISHED", "BoardAddResult", "BoardFileError", "BudgetViolationError",
           "EntrantError", "EntrantRefusedError", "InvalidRecordsError", "RefreshRefusedError", "board_add", "board_from_records",
           "board_methods", "check_records", "headline", "leaderboard_rows", "lost_cells_text", "method_rows",
           "outcome_text", "rank_entrant", "ranks_text", "read_board", "read_records", "records_frame", "refresh_records",
           "summary_markdown", "write_records"]
