"""Intrinsic Memory Agents on LangGraph (Yuen et al., 2025): the application.

The method itself is the `intrinsic_memory` library (library/ in this repository); this
package is what runs on it: the paper's case study as a scheduled meeting of role agents
(`ima.meeting`), the `ima` command line, evaluation against a memoryless
baseline, long-term memory across runs, and the benchmarks.
"""

__version__ = "0.1.0"
