#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/seeds/<target>/): small, readable inputs.

Specs, timers and durations come from crates/core/tests/fixtures/peer-vectors.jsonl, mapped to
Sundial specs the way tests/conformance.rs maps them (fixtures/README.md); templates, JSONPaths
and job bodies, which no fixture file holds, from the examples in the core's tests and docs.
Rerun after the fixtures change: python3 fuzz/seeds/make.py
"""
import json
import pathlib
import re
import shutil

HERE = pathlib.Path(__file__).resolve().parent
VECTORS = HERE.parent.parent / "crates/core/tests/fixtures/peer-vectors.jsonl"

DST = {
    "robfig": {"gap": "skip", "overlap": "both"},
    "croner": {"gap": "shift", "overlap": "first"},
    "croniter": {"gap": "shift", "overlap": "auto"},
}


def camel(key):
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)


def temporal_spec(spec):
    out, calendars, exclude = {}, [], []
    for key, val in spec.items():
        if key in ("calendar", "structured_calendar"):
            calendars += [{camel(k): v for k, v in c.items()} for c in val]
        elif key in ("exclude_calendar", "exclude_structured_calendar"):
            exclude += [{camel(k): v for k, v in c.items()} for c in val]
        elif key == "cron_string":
            out["cron"] = val
        elif key == "interval":
            out["intervals"] = [
                {{"interval": "every", "phase": "offset"}[k]: v for k, v in iv.items()} for iv in val
            ]
        else:
            out[camel(key).replace("timezoneName", "timeZone")] = val
    if calendars:
        out["calendars"] = calendars
    if exclude:
        out["exclude"] = exclude
    out["dialect"] = "temporal"
    return out


def sundial_spec(v):
    if v["dialect"].startswith("temporal"):
        return temporal_spec(v["spec"])
    cron = v["spec"]
    out = {"cron": [cron], "dialect": "quartz" if v["dialect"] == "quartz7" else "standard"}
    if not re.match(r"\s*(CRON_)?TZ=", cron):
        out["timeZone"] = v["time_zone"]
    if v["peer"] in DST:
        out["dst"] = DST[v["peer"]]
    return out


def durations_in(value):
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("every", "offset", "jitter") and isinstance(v, str):
                yield v
            else:
                yield from durations_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from durations_in(v)


def main():
    seeds = {name: {} for name in ("spec", "timer", "duration", "template", "jsonpath", "job")}
    for line in VECTORS.read_text().splitlines():
        v = json.loads(line)
        spec = sundial_spec(v)
        seeds["spec"][v["id"]] = json.dumps(spec)
        for d in durations_in(spec):
            seeds["duration"][d] = d
            seeds["timer"]["every-" + d] = json.dumps({"dueTime": "10s", "period": d})
        if not v["dialect"].startswith("temporal"):
            seeds["timer"][v["id"]] = json.dumps({"period": v["spec"]})
    # Examples from docs/spec.md, docs/api.md and the timer module's table.
    timers = [
        {}, {"period": "external"}, {"dueTime": "0s", "period": "external"},
        {"dueTime": "2023-10-01 09:00:01", "period": "0s"},
        {"dueTime": "PT10S", "period": "R4/PT3S"},
        {"dueTime": "2150-01-01 00:00:00", "period": "1h", "ttl": "1d"},
        {"dueTime": "2024-03-10T01:59:59-05:00", "period": "0 0 25 * * ?"},
        {"period": "R9223372036854775807/PT1S"},
    ]
    for i, t in enumerate(timers):
        seeds["timer"][f"doc-{i}"] = json.dumps(t)
    seeds["timer"]["request-timer"] = json.dumps({"timer": {"dueTime": "1m", "period": "1d"}})
    seeds["timer"]["request-schedule"] = json.dumps(
        {"schedule": {"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"}})
    for d in ["0h0m2s", "1d2h0m2s", "PT2H30M", "P1DT1H20M10S", "1.5h", "P1W", "250ms", "0",
              "36500d", "36501d", "PT0S", "45m"]:
        seeds["duration"][d] = d
    # From crates/core/src/expand.rs and template.rs (doc examples and tests).
    for i, t in enumerate([
        "service://main/x?cb=${schedulingFeedbackUrl}",
        "job=${jobId}&n=${$.student.name}",
        "${$.student}|json",
        "${schedulingNotifyBody}|json",
        "https://a.example/${jobId}?n=${executeNumber}&t=${SUNDIAL_VAR_TOKEN}",
        "${$.responses[0].list[*].id} ${responses[1].items[-1]['n']}",
        "${FIRST} ${user}|json ${quote}",
        "${$.big}${$.big}${$.big}",
        "${oops",
        "${$..s}",
    ]):
        seeds["template"][f"t{i}"] = t
    for i, p in enumerate([
        "$.student.name",
        "$.responses[0].list[-1].id",
        "$['student'][\"marks\"][*]",
        "a.b[0]\n{\"a\": {\"b\": [1, 2]}}",
        "$.items[*].n\n{\"items\": [{\"n\": 1}, {\"n\": [2]}]}",
        "$..s",
        "responses[1].items[0].n",
        "$[''].weird key",
    ]):
        seeds["jsonpath"][f"p{i}"] = p
    # From crates/core/src/job/tests/, docs/api.md and docs/engine.md.
    minimal = {"jobName": "job", "creator": "001", "creatorName": "client",
               "request": [{"url": "http://example.com/run"}]}
    jobs = [
        minimal,
        {**minimal, "timer": {"dueTime": "2150-01-01 00:00:00", "period": "1h", "ttl": "1d"}},
        {**minimal, "schedule": {"cron": ["*/5 * * * *"], "jitter": "30s"}, "overlap": "skip",
         "catchupWindow": "1m"},
        {"jobName": "nightly import", "creator": "u-1", "creatorName": "Ana",
         "async": True, "timeoutSeconds": 600,
         "timer": {"dueTime": "0s", "period": "external"},
         "request": [{"method": "POST", "url": "service://work/import",
                      "body": {"callback": "${schedulingFeedbackUrl}", "run": "${executeNumber}|json"}}],
         "notification": [{"stateEquals": "succeed", "method": "POST",
                           "url": "service://work/done", "body": "${schedulingNotifyBody}|json"}]},
        {**minimal, "jobId": "job-1", "retry": [{"errorEquals": "500", "intervalSeconds": 1,
                                                  "maxAttempts": 2, "backoffRate": 1.5}],
         "request": [{"method": "GET", "url": "https://a.example/${jobId}",
                      "headers": {"Accept": "application/json", "X-Token": "${SUNDIAL_VAR_TOKEN}"},
                      "respEnvName": "FIRST"},
                     {"method": "POST", "url": "service://x/y", "body": {"n": "${$.n}"}}]},
    ]
    for i, j in enumerate(jobs):
        seeds["job"][f"j{i}"] = json.dumps(j)
    for target, files in seeds.items():
        out = HERE / target
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for name, text in files.items():
            safe = re.sub(r"[^A-Za-z0-9.-]", "_", name)
            (out / safe).write_text(text)


if __name__ == "__main__":
    main()
