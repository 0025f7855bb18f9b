-- An endpoint keeps every secret a rotation replaced while it still signs, not only the last
-- one: `previous_secrets` is a JSON array of {"secret", "expires_at" (epoch ms)}, oldest first,
-- each secret sealed (`enc:…`) when an encryption key is set. A second rotation inside the
-- overlap no longer stops the first secret at once. The one previous secret of 010 moves in.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secrets text NOT NULL DEFAULT '[]';
--sqlite: UPDATE webhook_endpoints SET previous_secrets = json_array(json_object('secret', previous_secret, 'expires_at', previous_secret_expires_at)) WHERE previous_secret IS NOT NULL AND previous_secret_expires_at IS NOT NULL;
--postgres: UPDATE webhook_endpoints SET previous_secrets = json_build_array(json_build_object('secret', previous_secret, 'expires_at', previous_secret_expires_at))::text WHERE previous_secret IS NOT NULL AND previous_secret_expires_at IS NOT NULL;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_expires_at;
