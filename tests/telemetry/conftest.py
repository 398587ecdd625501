"""Keep telemetry tests from leaking state into the rest of the session."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _restore_verl_and_hub():
    module = sys.modules.get("verl.trainer.ppo.v1.trainer_base")
    saved_tq = getattr(module, "tq", None) if module is not None else None
    yield
    module = sys.modules.get("verl.trainer.ppo.v1.trainer_base")
    if module is not None:
        if saved_tq is None:
            import transfer_queue

            saved_tq = transfer_queue
        module.tq = saved_tq  # undo the TransferQueue stand-in of _telemetry_trainer.make_trainer
    from fgrpo_verl.telemetry import hub

    hub.reset_hub()  # close any endpoint a test started
