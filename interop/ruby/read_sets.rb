#!/usr/bin/env ruby
# Print, as one JSON object, what Sidekiq's own API reads from the retry, dead and schedule sets:
#   {"retry":[entry, ...], "dead":[...], "schedule":[...]}
# with, per entry, the fields Sidekiq's Web UI shows (Sidekiq::SortedEntry / JobRecord).
#   env: REDIS_URL, REDIS_NAMESPACE (see sidekiq_env.rb)
require "json"
require_relative "sidekiq_env"
require "sidekiq/api"

def entry(e)
  {
    "jid" => e.jid, "class" => e.klass, "display_class" => e.display_class, "args" => e.args,
    "display_args" => e.display_args, "queue" => e.queue, "at" => e.at.to_f,
    "retry_count" => e["retry_count"], "error_class" => e["error_class"],
    "error_message" => e["error_message"], "failed_at" => e["failed_at"],
    "retried_at" => e["retried_at"], "created_at" => e["created_at"], "bid" => e["bid"],
    "tags" => e.tags, "error" => e.error?
  }
end

puts JSON.generate(
  "retry" => Sidekiq::RetrySet.new.map { |e| entry(e) },
  "dead" => Sidekiq::DeadSet.new.map { |e| entry(e) },
  "schedule" => Sidekiq::ScheduledSet.new.map { |e| entry(e) }
)
