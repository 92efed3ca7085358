"""The bench drivers' shared library (bench/<x>/run.py and docker/run_without_engine.py).

stdlib only. The drivers put bench/ on sys.path and `import benchlib`; no driver imports another.

  procs         binaries staged (find_bin, stage_binaries), Procs (a process group stopped
                together), Server (a process in its own session with a log), process trees,
                die_with_parent, free_port (held until exit), wait_tcp, wait_until
  cell          Cell (ferry-cell: members name -> emulator/ferry/admin "host:port", pids per
                kind), start_cell, request (HTTP errors are answers), scrape (/stats families
                summed over label sets), OwnedStreams (fresh streams owned by one member)
  cell_configs  the cell bench's arms, compose layout, HAProxy edge, ferry configs, test CA
  cell_report   the cell bench's report: medians, paired ratios against PINNED and their goal,
                the ferries' counters (cell.md, cell.json)
  peers         the origin (nginx) and the peers (HAProxy, nginx, nghttpx) of the pass-through
                bench, a self-signed certificate, HTTP probes
  sampling      CPU ticks and peak RSS of process trees, the machine's busy ticks (/proc)
  wrk           a wrk run read back as JSON, the figures every bench keeps of a load run
  tables        log, med, fmt, write_results (the .md and .json every bench leaves)
"""
__all__ = ["cell_configs", "cell_report", "peers", "sampling", "tables", "wrk", "Cell",
           "OwnedStreams", "request", "scrape", "start_cell", "CELL_BINS", "FERRY_REL", "Procs",
           "Server", "children", "descendants", "die_with_parent", "find_bin", "free_port",
           "port_of", "process_tree", "stage_binaries", "wait_tcp", "wait_until",
           "write_results"]

from . import cell_configs, cell_report, peers, sampling, tables, wrk
from .cell import Cell, OwnedStreams, request, scrape, start_cell
from .procs import (CELL_BINS, FERRY_REL, Procs, Server, children, descendants,
                    die_with_parent, find_bin, free_port, port_of, process_tree,
                    stage_binaries, wait_tcp, wait_until)
from .tables import write_results
