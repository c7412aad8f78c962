#!/usr/bin/env ruby
# Push the job items of the JSON array on stdin one by one with Sidekiq::Client.push, as an
# application would, and print one jid per line. Keys Sidekiq does not know ("bid", "tags", ...)
# are stored as given; Sidekiq adds "jid", "created_at", "enqueued_at" and its defaults.
#   env: REDIS_URL, REDIS_NAMESPACE (see sidekiq_env.rb)
require "json"
require_relative "sidekiq_env"

JSON.parse($stdin.read).each do |item|
  jid = Sidekiq::Client.push(item) or raise "Sidekiq::Client.push returned nil for #{item.inspect}"
  puts jid
end
