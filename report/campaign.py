"""A campaign's record (campaign.json) and its outputs: the terminal table and
index.html.

The campaign (harness/campaign.py) fills one `CampaignRun` per matrix entry as it
runs and judges; the outputs read only these records, so the claim of a run comes
from the run's own settings, never from its directory's name.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any, Literal

from kafka_trial.checkers.claims import CLAIMS
from kafka_trial.checkers.results import Results
from pydantic import BaseModel, ConfigDict, Field

CAMPAIGN_FILE = "campaign.json"

Status = Literal["running", "ran", "done", "interrupted"]
VERDICT_OF_CODE = {0: "valid", 1: "INVALID", 2: "unknown"}


class CampaignRun(BaseModel):
    """One matrix entry: what it is, where it got to, and what its verdict said."""

    # Filled in phases as the run goes; a newer writer's fields are kept out, not errors.
    model_config = ConfigDict(extra="ignore")

    run_dir: str
    settings: str = ""
    name: str = Field("", description="the run's spec name: a preset's name, or the config's")
    source: str = Field("", description="the preset or config file the run came from")
    status: Status = "running"
    verdict: str | None = None  # valid, INVALID, unknown, setup problem, error
    code: int | None = None  # the run's exit code (3: it could not run)
    valid: bool | Literal["unknown"] | None = None
    forbidden: dict[str, int] = Field(default_factory=dict)
    allowed: dict[str, int] = Field(default_factory=dict)
    problems: tuple[str, ...] = ()
    acked: int | None = None
    faults_injected: int | None = None
    claim_borne: bool | None = None  # None: no claim, or not judged
    error: str | None = None
    run_s: float | None = None
    judge_s: float | None = None
    time_s: float | None = None
    warm_cluster: bool | None = None
    cluster_ready_s: float | None = None

    def judged(self, results: Results) -> None:
        self.valid = results.valid
        self.forbidden = results.forbidden()
        self.allowed = results.permitted()
        self.problems = results.problems
        self.acked = results.stats.send_outcomes.get("ok", 0)
        self.faults_injected = results.stats.faults_injected
        claim = CLAIMS.get(self.name)
        self.claim_borne = claim.judge(results).borne if claim is not None else None
        self.code = results.exit_code
        self.verdict = VERDICT_OF_CODE[self.code]
        self.status = "done"

    def failed(self, verdict: str, error: str) -> None:
        self.status, self.code, self.verdict, self.error = "done", 3, verdict, error

    @property
    def claim_id(self) -> str:
        claim = CLAIMS.get(self.name)
        return claim.id if claim else ""

    @property
    def shown_verdict(self) -> str:
        return self.verdict or self.status

    @property
    def claim_cell(self) -> str:
        """The claim and what this run says of it: `C2 yes`, `C4 NO` (a claim that an
        anomaly never appears, broken), `C2 not seen` (a claim that one can appear,
        which this run did not show), `C1 ?` (not judged)."""
        claim = CLAIMS.get(self.name)
        if claim is None:
            return "-"
        if self.claim_borne is None:
            return f"{claim.id} ?"
        if self.claim_borne:
            return f"{claim.id} yes"
        return f"{claim.id} " + ("not seen" if claim.expected == "anomaly" else "NO")


class CampaignState(BaseModel):
    """campaign.json: the matrix's spec, every run's record, and the outcome."""

    model_config = ConfigDict(extra="ignore")

    spec: dict[str, Any]
    runs: dict[str, CampaignRun] = Field(default_factory=dict)
    order: list[str] = Field(default_factory=list)
    status: Literal["running", "interrupted", "done"] = "running"
    clusters: dict[str, Any] = Field(default_factory=dict)
    exit_code: int | None = None

    @classmethod
    def load(cls, camp_dir: Path) -> CampaignState:
        return cls.model_validate(json.loads((camp_dir / CAMPAIGN_FILE).read_text()))

    def save(self, camp_dir: Path) -> None:
        tmp = camp_dir / (CAMPAIGN_FILE + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        os.replace(tmp, camp_dir / CAMPAIGN_FILE)

    def in_order(self) -> list[tuple[str, CampaignRun | None]]:
        return [(key, self.runs.get(key)) for key in self.order]


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{n} {c}" for n, c in d.items()) or "-"


def summary_table(state: CampaignState) -> str:
    """One row per run, no cell cut (each run's settings are in campaign.json and
    index.html). `claim`: whether the run bore its preset's claim out."""
    head = ("run", "verdict", "faults", "claim", "forbidden seen", "allowed seen", "acked")
    rows = [(*head, "cluster", "time")]
    for key, r in state.in_order():
        if r is None:
            rows.append((key, "not run", "", "", "-", "-", "", "", ""))
            continue
        rows.append(
            (
                key,
                r.shown_verdict + (f" ({r.error})" if r.error else ""),
                "" if r.faults_injected is None else str(r.faults_injected),
                r.claim_cell,
                _counts(r.forbidden),
                _counts(r.allowed),
                "" if r.acked is None else str(r.acked),
                "" if r.warm_cluster is None else "warm" if r.warm_cluster else "new",
                "" if r.time_s is None else f"{r.time_s:.0f}s",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def savings_line(clusters: dict[str, Any]) -> str:
    if not clusters.get("runs"):
        return ""
    line = f"clusters: {clusters['started']} started for {clusters['runs']} runs"
    if "saved_s" in clusters:
        line += (
            f"; a warm run was ready in {clusters['mean_warm_ready_s']}s against "
            f"{clusters['mean_cold_ready_s']}s cold, ~{clusters['saved_s']:.0f}s saved "
            "(plus a teardown per warm run)"
        )
    return line


_INDEX_CSS = (
    "body{font:13px system-ui,sans-serif;margin:16px}table{border-collapse:"
    "collapse}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
    "tr.ok td:nth-child(4){background:#e3f4e3}tr.bad td:nth-child(4){background:#fbe0e0}"
    "tr.unk td:nth-child(4){background:#fff2cc}"
)


def _yes(borne: bool | None) -> str:
    return {True: "yes", False: "no", None: "not judged"}[borne]


def _index_row(camp_dir: Path, key: str, r: CampaignRun | None) -> str:
    report = Path(key) / "report.html"
    link = (
        f'<a href="{escape(str(report))}">{escape(key)}</a>'
        if (camp_dir / report).is_file()
        else escape(key)
    )
    if r is None:
        return f'<tr class="unk"><td>{link}</td><td></td><td></td><td>not run</td>' + (
            "<td></td>" * 2 + "<td>-</td>" * 2 + "<td></td></tr>"
        )
    verdict = r.shown_verdict
    cls = {"valid": "ok", "INVALID": "bad"}.get(verdict, "unk")
    return (
        f'<tr class="{cls}"><td>{link}</td><td>{escape(r.claim_id)}</td>'
        f"<td>{escape(r.settings)}</td><td>{escape(verdict)}</td>"
        f"<td>{escape(_yes(r.claim_borne) if r.claim_id else '')}</td>"
        f"<td>{escape('' if r.faults_injected is None else str(r.faults_injected))}</td>"
        f"<td>{escape(_counts(r.forbidden))}</td><td>{escape(_counts(r.allowed))}</td>"
        f"<td>{escape('' if r.time_s is None else str(r.time_s))}</td></tr>"
    )


def write_index(camp_dir: Path, state: CampaignState) -> Path:
    """index.html: every run with its verdict, linked to its report (relative links)."""
    rows = [_index_row(camp_dir, key, r) for key, r in state.in_order()]
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>kafka-trial campaign {escape(camp_dir.name)}</title>"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<style>{_INDEX_CSS}</style></head><body>"
        f"<h1>Campaign {escape(camp_dir.name)}: {escape(state.status)}</h1>"
        "<table><thead><tr><th>run</th><th>claim</th><th>settings</th><th>verdict</th>"
        "<th>claim borne out</th><th>faults injected</th><th>forbidden seen</th>"
        "<th>allowed seen</th><th>time (s)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )
    out = camp_dir / "index.html"
    out.write_text(html)
    return out
