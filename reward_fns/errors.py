"""Errors raised for data and configuration bugs (never for a bad model response)."""

from __future__ import annotations


class RewardInputError(ValueError):
    """Base class: the caller's data or settings are wrong, not the model's response."""


class GroundTruthError(RewardInputError):
    """A data row's ``reward_model.ground_truth`` cannot be scored against.

    Raised on the first call that sees the row, so a broken data set fails loudly instead of
    silently scoring 0 for a whole run.
    """


class UnknownDataSourceError(RewardInputError):
    """``data_source`` is not served by any reward function of this package."""


class RewardSettingError(RewardInputError):
    """A reward keyword argument (``reward.custom_reward_function.reward_kwargs.*``) is invalid."""
