-- Who decided an approval, and how (ARCHITECTURE §4.4). channel: `link` (a named approver's own
-- link), `shared` (a link naming nobody), `api` (an API key). claimed_by: a name the holder of a
-- shared link typed, never identity. key_id and user_id: the API key and the user it said it
-- acted for. address and user_agent: the request's, for the audit.
ALTER TABLE approval_decisions ADD COLUMN channel text;
ALTER TABLE approval_decisions ADD COLUMN claimed_by text;
ALTER TABLE approval_decisions ADD COLUMN key_id text;
ALTER TABLE approval_decisions ADD COLUMN user_id text;
ALTER TABLE approval_decisions ADD COLUMN address text;
ALTER TABLE approval_decisions ADD COLUMN user_agent text;
