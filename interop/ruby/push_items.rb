#!/usr/bin/env ruby
# Push the job items of the JSON array on stdin one by one with Sidekiq::Client.push, as an
# application would, and print one jid per line. Keys Sidekiq does not know ("bid", "tags", ...)
# are stored as given; Sidekiq adds "jid", "created_at", "enqueued_at" and its defaults.
#   env: SIDEKIQ_PEER (the shared peers/sidekiq folder, for common.rb), REDIS_URL, REDIS_NAMESPACE
require "json"
require File.join(ENV.fetch("SIDEKIQ_PEER"), "common")

JSON.parse($stdin.read).each do |item|
  jid = Sidekiq::Client.push(item) or raise "Sidekiq::Client.push returned nil for #{item.inspect}"
  puts jid
end
