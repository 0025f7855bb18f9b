-- Signals past the retention period (limits.signal_retention_s) are pruned by age.
CREATE INDEX signals_received_at ON signals (received_at);
