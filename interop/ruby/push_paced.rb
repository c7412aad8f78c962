#!/usr/bin/env ruby
# Push COUNT jobs of CLASS onto QUEUE one at a time with Sidekiq::Client.push, sleeping a random
# GAP_MIN..GAP_MAX seconds before each, as an application's requests would, and print one jid
# per line. Sidekiq stamps each job's enqueued_at as it pushes: the Go side measures pickup
# from it.
#   env: REDIS_URL, REDIS_NAMESPACE (see sidekiq_env.rb), COUNT, QUEUE, CLASS, GAP_MIN, GAP_MAX
require_relative "sidekiq_env"

count = Integer(ENV.fetch("COUNT"))
gap_min = Float(ENV.fetch("GAP_MIN"))
gap_max = Float(ENV.fetch("GAP_MAX"))
Sidekiq.redis { |r| r.ping } # connect before the first gap, so no push pays for it
count.times do |i|
  sleep(gap_min + rand * (gap_max - gap_min))
  jid = Sidekiq::Client.push("class" => ENV.fetch("CLASS"), "queue" => ENV.fetch("QUEUE"), "args" => [i])
  raise "Sidekiq::Client.push returned nil" unless jid
  puts jid
end
