-- +goose Up
-- A test run's simulated calls (spec 4.8 execute): each expanded
-- scenario x matrix combination is a simulation run that remembers its
-- test run and scenario, and carries the simulated caller's settings
-- (caller: JSON of noise asset and SNR, pace, disfluencies, accent,
-- silence, DTMF, topic change, voicemail answer) so the worker's real
-- call applies them. Plain 4.7 runs keep caller '{}' (the defaults).
ALTER TABLE simulation_runs ADD COLUMN caller TEXT NOT NULL DEFAULT '{}';
ALTER TABLE simulation_runs ADD COLUMN test_run_id BIGINT;
ALTER TABLE simulation_runs ADD COLUMN scenario_id BIGINT;
CREATE INDEX simulation_runs_test_run ON simulation_runs (test_run_id, id);

-- +goose Down
DROP INDEX simulation_runs_test_run;
ALTER TABLE simulation_runs DROP COLUMN scenario_id;
ALTER TABLE simulation_runs DROP COLUMN test_run_id;
ALTER TABLE simulation_runs DROP COLUMN caller;
