// Unit tests of src/io: SHA-256 against the FIPS 180-4 / NIST vectors, JSON, safetensors round trip and rejection of
// malformed files, IDX parsing (plain and gzip), text corpora, atomic writes.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>

#include "io_error.h"
#include "file_util.h"
#include "idx.h"
#include "json.h"
#include "safetensors.h"
#include "sha256.h"
#include "text.h"

using namespace openrnn::io;

namespace {
std::string temp_dir() {
  char tmpl[] = "/tmp/openrnn_io_test_XXXXXX";
  const char* d = mkdtemp(tmpl);
  if (!d) throw std::runtime_error("mkdtemp failed");
  return d;
}
}  // namespace

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a', fed in uneven pieces to exercise the buffering.
  Sha256 h;
  const std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left) {
    const size_t n = std::min(left, chunk.size());
    h.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(h.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, LengthsAroundBlockBoundary) {
  // 55, 56, 63, 64, 65 bytes: the padding cases. Hashing in one piece and byte by byte must agree.
  for (size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + 3);
    Sha256 h;
    for (char c : s) h.update(&c, 1);
    EXPECT_EQ(h.finish_hex(), sha256_hex(s.data(), s.size())) << n;
  }
}

TEST(Json, ParseAndDump) {
  const Json j = Json::parse(R"( {"a": [1, 2.5, -3e2, true, null], "b": "x\"\\\u00e9\n", "big": 18446744073709551615} )");
  EXPECT_EQ(j.at("a").items().size(), 5u);
  EXPECT_EQ(j.at("a").items()[0].as_int64(), 1);
  EXPECT_DOUBLE_EQ(j.at("a").items()[2].as_double(), -300.0);
  EXPECT_EQ(j.at("b").as_string(), "x\"\\\xc3\xa9\n");
  EXPECT_EQ(j.at("big").as_uint64(), 18446744073709551615ull);
  EXPECT_EQ(Json::parse(j.dump()).dump(), j.dump());
}

TEST(Json, RejectsMalformed) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "\"\\x\"", "nul", "{\"a\":1}x",
                          "{\"a\":1,\"a\":2}", "\"\\ud800\"", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                                              "[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
                                                              "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"})
    EXPECT_THROW(Json::parse(bad), FormatError) << bad;
  EXPECT_THROW(Json::parse("-1").as_uint64(), FormatError);
  EXPECT_THROW(Json::parse("1.5").as_int64(), FormatError);
  EXPECT_THROW(Json::parse("99999999999999999999").as_int64(), FormatError);
}

static SafeTensors sample_tensors() {
  SafeTensors st;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(12);
  for (float& v : w) v = u(gen);
  st.tensors["rnn.weight_ih_l0"] = Tensor::from_f32(w.data(), {4, 3});
  const int32_t ids[5] = {5, -1, 7, 0, 2147483647};
  st.tensors["run.perm"] = Tensor::from_i32(ids, {5});
  const uint8_t v[3] = {'a', 'b', '\n'};
  st.tensors["data.vocab"] = Tensor::from_u8(v, {3});
  st.tensors["empty"] = Tensor::from_f32(nullptr, {0, 7});
  const double d = 3.25;
  st.tensors["scalar"] = Tensor::from_f64(&d, {});
  st.metadata["format"] = "openrnn-checkpoint-v1";
  st.metadata["config"] = "{\"x\": \"\\u0001\"}";
  return st;
}

TEST(Safetensors, RoundTripIsExact) {
  const SafeTensors st = sample_tensors();
  const std::vector<uint8_t> bytes = serialize_safetensors(st);
  // Header length is little-endian and the data buffer starts 8-byte aligned.
  uint64_t hl = 0;
  for (int i = 7; i >= 0; --i) hl = (hl << 8) | bytes[i];
  EXPECT_EQ((8 + hl) % 8, 0u);
  const SafeTensors back = parse_safetensors(bytes.data(), bytes.size());
  EXPECT_EQ(back.metadata, st.metadata);
  ASSERT_EQ(back.tensors.size(), st.tensors.size());
  for (const auto& kv : st.tensors) {
    const Tensor& b = back.tensors.at(kv.first);
    EXPECT_EQ(b.dtype, kv.second.dtype) << kv.first;
    EXPECT_EQ(b.shape, kv.second.shape) << kv.first;
    EXPECT_EQ(b.data, kv.second.data) << kv.first;
  }
  EXPECT_EQ(serialize_safetensors(back), bytes);
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Written by hand as the format specification describes (not by our writer): two F32 tensors, unsorted keys.
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"k":"v"}})";
  std::vector<uint8_t> f(8);
  for (int i = 0; i < 8; ++i) f[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  f.insert(f.end(), header.begin(), header.end());
  const float vals[3] = {1.5f, -2.0f, 0.25f};
  const uint8_t* p = reinterpret_cast<const uint8_t*>(vals);
  f.insert(f.end(), p, p + 12);
  const SafeTensors st = parse_safetensors(f.data(), f.size());
  EXPECT_EQ(st.get("a").to_f32("a"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(st.get("b").to_f32("b"), (std::vector<float>{0.25f}));
  EXPECT_EQ(st.meta("k"), "v");
}

TEST(Safetensors, RejectsEveryTruncation) {
  const std::vector<uint8_t> bytes = serialize_safetensors(sample_tensors());
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_THROW(parse_safetensors(bytes.data(), n), FormatError) << n;
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(parse_safetensors(longer.data(), longer.size()), FormatError);
}

static std::vector<uint8_t> with_header(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> f(8);
  for (int i = 0; i < 8; ++i) f[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  f.insert(f.end(), header.begin(), header.end());
  f.resize(f.size() + data_bytes, 0);
  return f;
}

TEST(Safetensors, RejectsInconsistentHeaders) {
  const char* bad[] = {
      R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})",                 // unknown dtype
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",                 // size mismatch
      R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",                // negative dim
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",                 // end < begin
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",               // 3 offsets
      R"({"a":{"dtype":"F32","shape":[1]}})",                                      // missing offsets
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",                 // gap at start
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",  // overflow
      R"({"__metadata__":{"k":1}})",                                               // non-string metadata
      R"([1,2])",                                                                  // not an object
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})",       // unknown field
  };
  for (const char* h : bad) {
    const std::vector<uint8_t> f = with_header(h, 8);
    EXPECT_THROW(parse_safetensors(f.data(), f.size()), FormatError) << h;
  }
  // A header length beyond the file or beyond the limit.
  std::vector<uint8_t> f(16, 0);
  f[0] = 0xff;
  f[7] = 0x7f;
  EXPECT_THROW(parse_safetensors(f.data(), f.size()), FormatError);
}

TEST(Safetensors, AtomicWriteReplacesAndLeavesNoTemp) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/ck.safetensors";
  write_safetensors_atomic(path, sample_tensors());
  SafeTensors s2 = sample_tensors();
  s2.metadata["step"] = "2";
  write_safetensors_atomic(path, s2);
  EXPECT_EQ(read_safetensors(path).meta("step"), "2");
  // Only the file itself remains in the directory.
  const std::string cmd = "test $(ls -A " + dir + " | wc -l) -eq 1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_THROW(write_safetensors_atomic(dir + "/no/such/dir/x", s2), IoError);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

static std::vector<uint8_t> idx_bytes(uint8_t type, std::vector<uint32_t> dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> f = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) f.push_back(static_cast<uint8_t>(d >> s));
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

TEST(Idx, ParsesAndRejects) {
  std::vector<uint8_t> px(2 * 3 * 4);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 11);
  const std::vector<uint8_t> f = idx_bytes(0x08, {2, 3, 4}, px);
  const IdxArray a = parse_idx(f.data(), f.size());
  EXPECT_EQ(a.magic(), 2051u);
  EXPECT_EQ(a.dims, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(a.data, px);
  for (size_t n = 0; n < f.size(); ++n) EXPECT_THROW(parse_idx(f.data(), n), FormatError) << n;
  std::vector<uint8_t> g = f;
  g.push_back(1);
  EXPECT_THROW(parse_idx(g.data(), g.size()), FormatError);  // trailing byte
  g = f;
  g[0] = 1;
  EXPECT_THROW(parse_idx(g.data(), g.size()), FormatError);  // bad magic
  g = f;
  g[2] = 0x07;
  EXPECT_THROW(parse_idx(g.data(), g.size()), FormatError);  // unknown type
}

static void write_gz(const std::string& path, const std::vector<uint8_t>& data) {
  gzFile g = gzopen(path.c_str(), "wb");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(gzwrite(g, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  gzclose(g);
}

TEST(Idx, LoadsGzipImageSetAndChecksLabels) {
  const std::string dir = temp_dir();
  std::vector<uint8_t> px(3 * 2 * 2, 7);
  write_gz(dir + "/im.gz", idx_bytes(0x08, {3, 2, 2}, px));
  write_gz(dir + "/lb.gz", idx_bytes(0x08, {3}, {1, 9, 0}));
  write_gz(dir + "/lb_bad.gz", idx_bytes(0x08, {3}, {1, 10, 0}));
  write_gz(dir + "/lb_short.gz", idx_bytes(0x08, {2}, {1, 2}));
  const ImageSet s = load_image_set(dir + "/im.gz", dir + "/lb.gz");
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.rows, 2u);
  EXPECT_EQ(s.labels, (std::vector<uint8_t>{1, 9, 0}));
  EXPECT_THROW(load_image_set(dir + "/im.gz", dir + "/lb_bad.gz"), FormatError);
  EXPECT_THROW(load_image_set(dir + "/im.gz", dir + "/lb_short.gz"), FormatError);
  EXPECT_THROW(load_image_set(dir + "/lb.gz", dir + "/im.gz"), FormatError);  // swapped: wrong magic
  // A truncated gzip stream is an error, not a short file.
  std::vector<uint8_t> gz = read_file_bytes(dir + "/im.gz");
  gz.resize(gz.size() - 6);
  EXPECT_THROW(gunzip(gz.data(), gz.size(), "t", 1 << 20), FormatError);
  EXPECT_THROW(load_idx(dir + "/missing.gz"), IoError);
  std::system(("rm -rf " + dir).c_str());
}

TEST(Idx, RealMnistWhenAvailable) {
  const char* root = std::getenv("OPENRNN_DATA");
  if (!root) GTEST_SKIP() << "OPENRNN_DATA not set";
  const std::string d = std::string(root) + "/mnist/";
  const ImageSet t = load_image_set(d + "t10k-images-idx3-ubyte.gz", d + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(t.count, 10000u);
  EXPECT_EQ(t.rows, 28u);
  EXPECT_EQ(t.cols, 28u);
  const std::vector<uint8_t> raw = read_file_bytes(d + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(sha256_hex(raw.data(), raw.size()), "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6");
}

TEST(Text, CorpusAndEncoding) {
  const std::string dir = temp_dir();
  const std::string p = dir + "/t.txt";
  const std::string text = "hello world\n";
  write_file_atomic(p, text.data(), text.size());
  const CharCorpus c = load_char_corpus(p);
  EXPECT_EQ(c.vocab, (std::vector<uint8_t>{'\n', ' ', 'd', 'e', 'h', 'l', 'o', 'r', 'w'}));
  ASSERT_EQ(c.ids.size(), text.size());
  for (size_t i = 0; i < text.size(); ++i) EXPECT_EQ(c.vocab[static_cast<size_t>(c.ids[i])], static_cast<uint8_t>(text[i]));
  EXPECT_EQ(encode_chars("low", c.vocab), (std::vector<int32_t>{5, 6, 8}));
  EXPECT_THROW(encode_chars("lox", c.vocab), FormatError);
  write_file_atomic(p, "", 0);
  EXPECT_THROW(load_char_corpus(p), FormatError);
  std::system(("rm -rf " + dir).c_str());
}
