"""Alert rules: promtool's syntax check and unit tests that the alerts fire (and stay quiet)."""
# ruff: noqa: E501 -- the expected alert annotations are long single lines

from __future__ import annotations

import subprocess
from pathlib import Path

from _telemetry_promserver import require_binary

MONITORING = Path(__file__).resolve().parents[2] / "scripts" / "monitoring"

RULE_TESTS = """
rule_files:
  - {rules}
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'fgrpo_last_step_timestamp_seconds{{job="fgrpo", instance="d:9464"}}'
        values: '0+0x30'
    alert_rule_test:
      - eval_time: 10m
        alertname: FgrpoNoTrainingStep
        exp_alerts: []
      - eval_time: 17m
        alertname: FgrpoNoTrainingStep
        exp_alerts:
          - exp_labels: {{severity: critical, job: fgrpo, instance: "d:9464"}}
            exp_annotations:
              summary: "No F-GRPO training step for 15 minutes on d:9464"
              description: "The last training step finished 17m 0s ago. Check the rollout servers, the reward workers and the driver log."
  - interval: 1m
    input_series:
      - series: 'fgrpo_prompts_forgotten{{job="fgrpo", instance="d:9464", data_source="math"}}'
        values: '0+2x150'
      - series: 'fgrpo_prompts_ever_solved{{job="fgrpo", instance="d:9464", data_source="math"}}'
        values: '1000+0x150'
      - series: 'fgrpo_prompts_forgotten{{job="fgrpo", instance="d:9464", data_source="code"}}'
        values: '5+0x150'
      - series: 'fgrpo_prompts_ever_solved{{job="fgrpo", instance="d:9464", data_source="code"}}'
        values: '1000+0x150'
    alert_rule_test:
      - eval_time: 100m
        alertname: FgrpoForgottenPromptsRising
        exp_alerts:
          - exp_labels: {{severity: warning, job: fgrpo, instance: "d:9464", data_source: math}}
            exp_annotations:
              summary: "Forgotten prompts rising for data_source math"
              description: "120 more prompts of math went from solved to a success rate of 0 within an hour: the policy is losing rare solutions."
  - interval: 1m
    input_series:
      - series: 'fgrpo_pass_at_k_proxy_ratio{{job="fgrpo", instance="d:9464", data_source="math", k="64"}}'
        values: '0.9-0.001x200'
      - series: 'fgrpo_batch_pass_at_1_ratio{{job="fgrpo", instance="d:9464", data_source="math"}}'
        values: '0.3+0.001x200'
      - series: 'fgrpo_pass_at_k_proxy_ratio{{job="fgrpo", instance="d:9464", data_source="code", k="64"}}'
        values: '0.9+0.001x200'
      - series: 'fgrpo_batch_pass_at_1_ratio{{job="fgrpo", instance="d:9464", data_source="code"}}'
        values: '0.3+0.001x200'
    alert_rule_test:
      - eval_time: 150m
        alertname: FgrpoPassAtKFallingWhilePass1Rises
        exp_alerts:
          - exp_labels: {{severity: warning, job: fgrpo, instance: "d:9464", data_source: math, k: "64"}}
            exp_annotations:
              summary: "pass@64 proxy falling while pass@1 rises (math)"
              description: "Over the last hour the training-set pass@64 proxy of math fell while the batch pass@1 rose: solution diversity is collapsing. Consider a larger algorithm.focal.gamma."
"""


def test_promtool_checks_rules_and_config():
    promtool = require_binary("promtool")
    rules = subprocess.run([promtool, "check", "rules", str(MONITORING / "alerts.yml")], capture_output=True, text=True)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert "SUCCESS: 4 rules found" in rules.stdout
    config = subprocess.run(
        [promtool, "check", "config", "--syntax-only", str(MONITORING / "prometheus.yml")],
        capture_output=True,
        text=True,
    )
    assert config.returncode == 0, config.stdout + config.stderr


def test_alerts_fire_on_the_conditions_they_describe(tmp_path):
    promtool = require_binary("promtool")
    test_file = tmp_path / "alerts_test.yml"
    test_file.write_text(RULE_TESTS.format(rules=MONITORING / "alerts.yml"))
    result = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
