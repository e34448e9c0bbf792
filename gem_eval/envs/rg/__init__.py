"""ReasoningGym envs: ``rg:NAME-v0`` for every generator of ``reasoning-gym``.

:class:`~gem_eval.envs.rg.env.ReasoningGymEnv` serves them all; :mod:`.names` lists the
generators so that registering the ids imports neither ``reasoning_gym`` nor the env.
"""
