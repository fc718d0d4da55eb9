// Stop strings across deltas: what is emitted when, truncation, several stop strings, UTF-8,
// and that the result never depends on how the text was split.
#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"

namespace strata {
namespace {

struct Run {
  std::vector<std::string> emits;  // per delta
  std::string text;                // everything emitted, flush included
  bool stopped = false;
  int stop_index = -1;
};

Run feed_all(std::vector<std::string> stops, const std::vector<std::string>& deltas) {
  StopMatcher m(std::move(stops));
  Run run;
  for (const auto& d : deltas) {
    auto r = m.feed(d);
    run.emits.push_back(r.emit);
    run.text += r.emit;
    if (r.stopped) {
      run.stopped = true;
      run.stop_index = r.stop_index;
      break;
    }
  }
  if (!run.stopped) run.text += m.flush();
  return run;
}

std::vector<std::string> chars(const std::string& s) {
  std::vector<std::string> out;
  for (char c : s) out.emplace_back(1, c);
  return out;
}

TEST(StopMatcher, NoStopStringsPassesEverythingThrough) {
  auto r = feed_all({}, {"Hello", ", ", "world"});
  EXPECT_EQ(r.emits, (std::vector<std::string>{"Hello", ", ", "world"}));
  EXPECT_FALSE(r.stopped);
}

TEST(StopMatcher, StopSplitOverThreeDeltas) {
  auto r = feed_all({"STOP"}, {"The end S", "T", "OP and more", "never"});
  EXPECT_EQ(r.emits, (std::vector<std::string>{"The end ", "", ""}));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 0);
  EXPECT_EQ(r.text, "The end ");  // the stop string itself and what follows are dropped
}

TEST(StopMatcher, FalseStartIsReleased) {
  // "ST" could begin "STOP", so it is held; "STx" cannot, so it is emitted.
  auto r = feed_all({"STOP"}, {"aS", "T", "x"});
  EXPECT_EQ(r.emits, (std::vector<std::string>{"a", "", "STx"}));
  EXPECT_FALSE(r.stopped);
}

TEST(StopMatcher, OverlappingPrefixes) {
  // "ababc" contains "abc" at 2: the first "ab" is released as soon as the next "a" shows
  // it cannot be the start of "abc"; the second "ab" is held until the "c" completes it.
  auto r = feed_all({"abc"}, chars("ababc"));
  EXPECT_EQ(r.emits, (std::vector<std::string>{"", "", "ab", "", ""}));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(feed_all({"abc"}, {"ababc"}).text, "ab");
  EXPECT_EQ(feed_all({"aab"}, chars("aaab")).text, "a");
  EXPECT_EQ(feed_all({"abab"}, chars("abababx")).text, "");
}

TEST(StopMatcher, MultipleStopStrings) {
  // "lo w" completes (at byte 7) before "world" (byte 11) although "world" is listed first.
  auto r = feed_all({"world", "lo w"}, {"hello world"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 1);
  EXPECT_EQ(r.text, "hel");
  EXPECT_EQ(feed_all({"world", "lo w"}, chars("hello world")).text, "hel");
  // Completing at the same byte: the one that starts first (the longer) wins.
  auto t = feed_all({"c", "bc"}, {"abc"});
  EXPECT_EQ(t.stop_index, 1);
  EXPECT_EQ(t.text, "a");
  // Held for the longest candidate prefix among all stop strings.
  auto h = feed_all({"xyz", "yzw"}, {"ay", "z"});
  EXPECT_EQ(h.emits, (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(h.text, "ayz");  // flushed at the end: no stop string completed
}

TEST(StopMatcher, Utf8MultiByteStopStrings) {
  // "。" is E3 80 82; the deltas cut it between its bytes.
  auto r = feed_all({"。"}, {"你好", "\xE3", "\x80", "\x82再见"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "你好");
  EXPECT_EQ(r.emits, (std::vector<std::string>{"你好", "", "", ""}));
  // A different character with the same lead byte is released whole once it is complete.
  auto s = feed_all({"。"}, {"\xE3", "\x80", "\x81!"});  // U+3001 "、"
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.emits, (std::vector<std::string>{"", "", "、!"}));
  auto e = feed_all({"→end"}, {"a →", "en", "d."});
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.text, "a ");
}

TEST(StopMatcher, NeverEmitsHalfACharacter) {
  // "é" = C3 A9 split over two deltas, with no stop string involved.
  auto r = feed_all({"x"}, {"caf\xC3", "\xA9!"});
  EXPECT_EQ(r.emits, (std::vector<std::string>{"caf", "é!"}));
  auto four = feed_all({}, {"\xF0\x9F", "\x98", "\x80"});  // U+1F600
  EXPECT_EQ(four.emits, (std::vector<std::string>{"", "", "\xF0\x9F\x98\x80"}));
}

TEST(StopMatcher, FlushReturnsHeldTextAndStopEndsEverything) {
  StopMatcher m({"abc"});
  EXPECT_EQ(m.feed("xab").emit, "x");
  EXPECT_EQ(m.held(), "ab");
  EXPECT_EQ(m.flush(), "ab");
  StopMatcher n({"abc"});
  auto r = n.feed("zabcd");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "z");
  EXPECT_TRUE(n.stopped());
  auto after = n.feed("more");
  EXPECT_TRUE(after.stopped);
  EXPECT_EQ(after.emit, "");
  EXPECT_EQ(n.flush(), "");
}

TEST(StopMatcher, RejectsEmptyStopStrings) { EXPECT_THROW(StopMatcher({"a", ""}), Error); }

TEST(StopMatcher, StateRoundTrip) {
  StopMatcher m({"abc", "。"});
  m.feed("xyzab");
  auto r = StopMatcher::from_json(nlohmann::json::parse(m.to_json().dump()));
  EXPECT_EQ(r.held(), "ab");
  auto out = r.feed("c");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.emit, "");
  EXPECT_THROW(StopMatcher::from_json(nlohmann::json{{"stop", 1}}), Error);
}

// Reference: the stop point from the whole text at once, by definition (earliest end, then
// earliest start).
Run reference(const std::vector<std::string>& stops, const std::string& text) {
  Run best;
  size_t best_end = std::string::npos, best_start = 0;
  for (size_t end = 1; end <= text.size() && best_end == std::string::npos; ++end)
    for (size_t i = 0; i < stops.size(); ++i) {
      const auto& s = stops[i];
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0 &&
          (best_end == std::string::npos || end - s.size() < best_start)) {
        best_end = end;
        best_start = end - s.size();
        best.stop_index = int(i);
      }
    }
  best.stopped = best_end != std::string::npos;
  best.text = best.stopped ? text.substr(0, best_start) : text;
  return best;
}

TEST(StopMatcher, AnySplitGivesTheSameResult) {
  std::mt19937 rng(17);
  const std::vector<std::string> stops = {"abc", "bca", "cc", "abab"};
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text;
    size_t n = rng() % 16;
    for (size_t i = 0; i < n; ++i) text += char('a' + rng() % 3);
    std::vector<std::string> deltas;
    for (size_t i = 0; i < text.size();) {
      size_t len = std::min(text.size() - i, size_t(rng() % 4));  // empty deltas too
      deltas.push_back(text.substr(i, len));
      i += len;
    }
    auto want = reference(stops, text);
    auto got = feed_all(stops, deltas);
    ASSERT_EQ(got.text, want.text) << text;
    ASSERT_EQ(got.stopped, want.stopped) << text;
    ASSERT_EQ(got.stop_index, want.stop_index) << text;
  }
}

}  // namespace
}  // namespace strata
