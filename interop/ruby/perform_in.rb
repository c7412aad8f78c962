#!/usr/bin/env ruby
# Schedules COUNT jobs of CLASS on QUEUE with Sidekiq's own perform_in, as a Rails application
# would, and prints one jid per line. The class need not exist in Ruby (exq runs it): a worker
# class of that name is defined here only to call perform_in on it.
#   env: REDIS_URL, REDIS_NAMESPACE (sidekiq_env.rb), CLASS (required), QUEUE (default "default"),
#        IN (seconds, required), COUNT (default 1), ARGS (a JSON array given to every job; default [i])
require "json"
require_relative "sidekiq_env"

name = ENV.fetch("CLASS") { abort "perform_in.rb: CLASS is not set" }
queue = ENV.fetch("QUEUE", "default")
delay = Float(ENV.fetch("IN") { abort "perform_in.rb: IN is not set" })
count = Integer(ENV.fetch("COUNT", "1"))
args = ENV["ARGS"] && JSON.parse(ENV["ARGS"])
raise "ARGS must be a JSON array" unless args.nil? || args.is_a?(Array)

klass = Object.const_set(name, Class.new { include Sidekiq::Worker })
count.times do |i|
  jid = klass.set(queue: queue).perform_in(delay, *(args || [i]))
  raise "perform_in returned no jid" unless jid
  puts jid
end
