#!/usr/bin/env ruby
# Creates sidekiq-cron 1.8 schedules from Ruby, as an application does (Sidekiq::Cron::Job.create,
# the call behind load_from_hash and config/schedule.yml), and prints, one JSON object per line,
# the cron_job:<name> hash that sidekiq-cron wrote, as HGETALL returns it (every value a string):
#   {"name":"..","klass":"..","cron":"..","description":"","args":"[..]","date_as_argument":"false",
#    "message":"{\"queue\":..,\"class\":..,\"args\":[..]}","status":"enabled","active_job":"false",
#    "queue_name_prefix":"","queue_name_delimiter":"","last_enqueue_time":"","symbolize_args":"false"}
# save also adds cron_jobs member "cron_job:<name>" and, unless cron_job:<name>:enqueued exists,
# the tick before now to it (so the poller does not enqueue that tick).
# stdin: a JSON array of job hashes with sidekiq-cron's keys: "name", "cron", "class" (or "klass"),
#   and optionally "queue", "args" (an array; an object is wrapped in one), "description",
#   "status" ("enabled"/"disabled"), "date_as_argument", "active_job", "message", ...
#   env: REDIS_URL, REDIS_NAMESPACE (see sidekiq_env.rb). Exits 1 on an invalid job (its errors on
#   stderr); the jobs before it are saved.
require "json"
require_relative "sidekiq_env"
require "sidekiq-cron"

JSON.parse($stdin.read).each do |h|
  job = Sidekiq::Cron::Job.new(h)
  # save returns false for an invalid job and Sidekiq.logger.info's result otherwise.
  if job.save == false
    abort "cron_create.rb: #{h["name"].inspect} is invalid: #{job.errors.join("; ")}"
  end
  stored = Sidekiq.redis { |c| c.hgetall("cron_job:#{job.name}") }
  puts JSON.generate(stored)
end
