#!/usr/bin/env ruby
# Prints, as one JSON object, what sidekiq-cron 1.8 itself reads from Redis (the same Job.all the
# poller and the /cron page use), to check that schedules exq wrote are understood by Ruby:
#   {"jobs":[{"name":..,"cron":..,"klass":..,"queue":..,"args":[..],"status":..,"enabled":true,
#     "valid":true,"errors":[],"last_enqueue_time":<epoch s or null>,"message":{..}|"<raw>",
#     "description":..,"date_as_argument":false,"previous_tick":<epoch s or null>,
#     "jid_history":[{"jid":..,"enqueued":..}, ...]}, ...], "count":<SCARD cron_jobs>}
# Job.all raises (as the poller would) when a hash cannot be loaded (an unparseable
# last_enqueue_time, a message that is not JSON): the script then exits 1 with the error.
#   env: REDIS_URL, REDIS_NAMESPACE (see sidekiq_env.rb); TZ is the zone of crons without one.
require "json"
require_relative "sidekiq_env"
require "sidekiq-cron"

jobs = Sidekiq::Cron::Job.all.sort_by(&:name).map do |job|
  valid = job.valid?
  message = begin
    Sidekiq.load_json(job.message)
  rescue
    job.message
  end
  {
    "name" => job.name, "cron" => job.cron, "klass" => job.klass,
    "queue" => job.instance_variable_get(:@queue), "args" => job.args, "status" => job.status,
    "enabled" => job.enabled?, "valid" => valid, "errors" => job.errors,
    "last_enqueue_time" => job.last_enqueue_time&.to_f, "message" => message,
    "description" => job.description, "date_as_argument" => job.date_as_argument?,
    "previous_tick" => (valid ? job.last_time.to_i : nil),
    "jid_history" => job.jid_history_from_redis
  }
end
puts JSON.generate("jobs" => jobs, "count" => Sidekiq::Cron::Job.count)
