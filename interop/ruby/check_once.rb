#!/usr/bin/env ruby
# Checks from Ruby that Sidekiq ran each expected job exactly once:
#   ruby check_once.rb JIDS_FILE RECORD_FILE
# JIDS_FILE holds one expected jid per line; RECORD_FILE is sidekiq_jobs.rb's record. Prints one
# summary line ("expected N jids, ran ok: N, missing: 0, duplicated: 0, unexpected: 0") and the
# first offenders, and exits 1 unless every expected jid has exactly one successful run and no
# other jid ran.
require "json"
require "set"

expected = File.readlines(ARGV.fetch(0), chomp: true).reject(&:empty?)
abort "check_once.rb: #{ARGV[0]} repeats a jid" unless expected.uniq.size == expected.size
ok = Hash.new(0)
File.foreach(ARGV.fetch(1)) do |line|
  rec = JSON.parse(line)
  ok[rec["jid"]] += 1 if rec["result"] == "ok"
end
wanted = expected.to_set
missing = expected.select { |jid| ok[jid].zero? }
duplicated = expected.select { |jid| ok[jid] > 1 }
unexpected = ok.keys.reject { |jid| wanted.include?(jid) }
puts "expected #{expected.size} jids, ran ok: #{expected.size - missing.size}, " \
  "missing: #{missing.size}, duplicated: #{duplicated.size}, unexpected: #{unexpected.size}"
missing.first(10).each { |jid| puts "  missing #{jid}" }
duplicated.first(10).each { |jid| puts "  duplicated #{jid} (#{ok[jid]} runs)" }
unexpected.first(10).each { |jid| puts "  unexpected #{jid}" }
exit(missing.empty? && duplicated.empty? && unexpected.empty? ? 0 : 1)
