-- The bundled catalog: the source apps' forwarded job types, as data (docs/app-guide.md "The
-- bundled catalog"). Each is a job_types row like a team's own type (migration 0022), delivered
-- to the URL in the consumer's var ENDPOINT_<TYPE>; an operator may change or delete them as any
-- other (cf-jobs types put|delete), and a deployment that does not run these apps may delete them
-- all. The platform's core knows none of them by name. shared/src/job/type_definition.rs's tests
-- check every definition here.
INSERT INTO job_types (name, version, definition, updated_at, updated_by) VALUES
  ('weather_refresh', 1, '{"description":"Refresh forecasts (hourly) or severe-weather alerts (every 15 minutes)","family":"default","payload_schema":{"properties":{"kind":{"enum":["forecast","alerts"]},"location":{"pattern":"\\S","type":"string"}},"type":"object"},"target":{"url_var":"ENDPOINT_WEATHER_REFRESH"},"timeout_ms":30000}', unixepoch() * 1000, 'migration'),
  ('listing_expiration', 1, '{"description":"Expire marketplace listings, daily","family":"default","payload_schema":{"type":"object"},"target":{"url_var":"ENDPOINT_LISTING_EXPIRATION"},"timeout_ms":120000}', unixepoch() * 1000, 'migration'),
  ('rank_recalculation', 1, '{"description":"Recalculate ranks, hourly","family":"default","payload_schema":{"type":"object"},"target":{"url_var":"ENDPOINT_RANK_RECALCULATION"},"timeout_ms":120000}', unixepoch() * 1000, 'migration'),
  ('inbound_email', 1, '{"description":"Poll the marketplace relay mailbox (the app''s inbox when mailbox is omitted)","family":"default","payload_schema":{"properties":{"mailbox":{"pattern":"\\S","type":"string"}},"type":"object"},"target":{"url_var":"ENDPOINT_INBOUND_EMAIL"},"timeout_ms":60000}', unixepoch() * 1000, 'migration'),
  ('stock_refresh', 1, '{"description":"Refresh quotes (every watched symbol when symbols is omitted)","family":"high","payload_schema":{"properties":{"symbols":{"items":{"pattern":"\\S","type":"string"},"type":"array"}},"type":"object"},"target":{"url_var":"ENDPOINT_STOCK_REFRESH"},"timeout_ms":30000}', unixepoch() * 1000, 'migration'),
  ('message_relay', 1, '{"description":"Relay one marketplace inquiry","family":"high","payload_schema":{"properties":{"message_id":{"pattern":"\\S","type":"string"}},"required":["message_id"],"type":"object"},"target":{"url_var":"ENDPOINT_MESSAGE_RELAY"},"timeout_ms":30000}', unixepoch() * 1000, 'migration'),
  ('social_refresh', 1, '{"description":"Refresh connected social accounts (one when account_id is given)","family":"low","max_attempts":4,"payload_schema":{"properties":{"account_id":{"pattern":"\\S","type":"string"}},"type":"object"},"retry":"crawler","target":{"url_var":"ENDPOINT_SOCIAL_REFRESH"},"timeout_ms":60000}', unixepoch() * 1000, 'migration'),
  ('sitemap_generation', 1, '{"description":"Write the sitemap XML, daily","family":"low","payload_schema":{"type":"object"},"target":{"url_var":"ENDPOINT_SITEMAP_GENERATION"},"timeout_ms":300000}', unixepoch() * 1000, 'migration'),
  ('click_rollup', 1, '{"description":"Roll up consented clicks for an hour (RFC 3339; the last complete hour when omitted)","family":"low","payload_schema":{"properties":{"hour":{"pattern":"^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$","type":"string"}},"type":"object"},"target":{"url_var":"ENDPOINT_CLICK_ROLLUP"},"timeout_ms":120000}', unixepoch() * 1000, 'migration'),
  ('image_processing', 1, '{"description":"Process one uploaded image","family":"bulk","payload_schema":{"properties":{"image_key":{"pattern":"\\S","type":"string"},"listing_id":{"pattern":"\\S","type":"string"}},"required":["image_key"],"type":"object"},"target":{"url_var":"ENDPOINT_IMAGE_PROCESSING"},"timeout_ms":120000}', unixepoch() * 1000, 'migration');

INSERT INTO job_type_versions (name, version, definition, changed_at, changed_by)
  SELECT name, version, definition, updated_at, updated_by FROM job_types WHERE updated_by = 'migration';
