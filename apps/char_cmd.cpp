// `openrnn char train FILE` and `openrnn char sample`: a character-level language model
//   ids [T, B] -> Embedding(V, C) -> LSTM(C, H, L layers, dropout p between layers) -> dropout p -> Linear(H, V)
// trained with truncated backpropagation through time: the text is cut into B contiguous streams; step k reads
// positions [k*T, (k+1)*T) of every stream, and the final states (hy, cy) become the next step's initial states
// (detached: no gradient flows across the boundary). When a stream runs out, the states are reset to zero and reading
// starts again at the beginning (a new epoch). The last --val-frac of the text is the validation split.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "common.h"
#include "io_error.h"
#include "file_util.h"
#include "json.h"
#include "nn.h"
#include "text.h"

namespace openrnn::app {
namespace {

constexpr const char* kTrainUsage =
    "usage: openrnn char train [FILE] [options]\n"
    "  FILE defaults to DIR/tinyshakespeare/input.txt, DIR = --data DIR, else $OPENRNN_DATA, else ~/.cache/openrnn\n"
    "  --device cpu|cuda (cpu)  --algo auto|standard|persistent (auto)  --threads N\n"
    "  --layers L (2)  --hidden H (512)  --embed C (64)  --dropout P (0.3)\n"
    "  --steps N (2000)  --seq-len T (100)  --batch B (64)  --seed S (1)  --val-frac F (0.1)\n"
    "  --optim adam|rmsprop|sgd (adam)  --lr LR (0.002)  --lr-decay F (0.5)  --decay-every N (1500)  --clip NORM (5)\n"
    "  --every N (200)    report (val_loss) and checkpoint interval in steps\n"
    "  --save PATH        checkpoint (safetensors) every --every steps and at the end\n"
    "  --resume PATH      continue a run from its checkpoint (FILE must be the same text)\n"
    "  --metrics FILE     JSON Lines, one record per report\n"
    "  --kill-at-step N   (crash-recovery testing) SIGKILL this process right after step N\n";
constexpr const char* kSampleUsage =
    "usage: openrnn char sample --checkpoint PATH [--prime TEXT] [--length N (500)] [--temperature T (0.8)]\n"
    "                           [--top-k K (0 = all)] [--seed S (1)] [--device cpu|cuda]\n";

struct CharConfig {
  std::vector<uint8_t> vocab;
  int embed = 64, hidden = 512, layers = 2;
  double dropout = 0.3;
  int seq_len = 100, batch = 64;
  uint64_t seed = 1;
  double val_frac = 0.1;
  OptimConfig opt;
  uint64_t dropout_seed = 0;  // the run's first rng draw (before initialisation)
  uint64_t text_bytes = 0;    // size of the training file (checked on resume)

  io::Json to_json() const {
    io::Json j = io::Json::object();
    j.set("task", io::Json::string("char"));
    j.set("embed", io::Json::integer(embed));
    j.set("hidden", io::Json::integer(hidden));
    j.set("layers", io::Json::integer(layers));
    j.set("dropout", io::Json::number(dropout));
    j.set("seq_len", io::Json::integer(seq_len));
    j.set("batch", io::Json::integer(batch));
    j.set("seed", io::Json::integer(static_cast<int64_t>(seed)));
    j.set("val_frac", io::Json::number(val_frac));
    j.set("optim", io::Json::string(optim_name(opt.kind)));
    j.set("lr", io::Json::number(opt.lr));
    j.set("lr_decay", io::Json::number(opt.decay));
    j.set("decay_every", io::Json::integer(opt.decay_every));
    j.set("clip", io::Json::number(opt.clip));
    j.set("dropout_seed", io::Json::string(std::to_string(dropout_seed)));
    j.set("text_bytes", io::Json::integer(static_cast<int64_t>(text_bytes)));
    return j;
  }
  static CharConfig from_json(const io::Json& j) {
    CharConfig c;
    if (j.at("task").as_string("task") != "char") throw io::FormatError("checkpoint is not from `openrnn char train`");
    c.embed = static_cast<int>(j.at("embed").as_int64("embed"));
    c.hidden = static_cast<int>(j.at("hidden").as_int64("hidden"));
    c.layers = static_cast<int>(j.at("layers").as_int64("layers"));
    c.dropout = j.at("dropout").as_double("dropout");
    c.seq_len = static_cast<int>(j.at("seq_len").as_int64("seq_len"));
    c.batch = static_cast<int>(j.at("batch").as_int64("batch"));
    c.seed = j.at("seed").as_uint64("seed");
    c.val_frac = j.at("val_frac").as_double("val_frac");
    if (!optim_from_name(j.at("optim").as_string("optim"), &c.opt.kind)) throw io::FormatError("unknown optim");
    c.opt.lr = j.at("lr").as_double("lr");
    c.opt.decay = j.at("lr_decay").as_double("lr_decay");
    c.opt.decay_every = static_cast<long>(j.at("decay_every").as_int64("decay_every"));
    c.opt.clip = j.at("clip").as_double("clip");
    c.dropout_seed = std::stoull(j.at("dropout_seed").as_string("dropout_seed"));
    c.text_bytes = j.at("text_bytes").as_uint64("text_bytes");
    if (c.embed < 1 || c.hidden < 1 || c.layers < 1 || c.layers > 64 || c.seq_len < 1 || c.batch < 1 ||
        c.embed > 65536 || c.hidden > 65536 || c.seq_len > 1000000 || c.batch > 1000000 || c.dropout < 0 ||
        c.dropout >= 1)
      throw io::FormatError("checkpoint config has out-of-range values");
    return c;
  }
};

// The network, built identically for training and sampling (so the rng draws match).
struct CharModel {
  CharModel(DeviceContext& dev, const CharConfig& c, openrnn_algo algo, Rng& rng)
      : embed(*dev.ops, "embed", static_cast<int>(c.vocab.size()), c.embed, rng),
        lstm(*dev.ops, *dev.handle, "rnn", c.embed, c.hidden, c.layers, c.layers > 1 ? c.dropout : 0.0,
             c.dropout_seed, algo, OPENRNN_LAYOUT_SEQ_MAJOR, rng),
        head(*dev.ops, "head", c.hidden, static_cast<int>(c.vocab.size()), rng) {}
  std::vector<Param*> params() { return {&embed.param(), &lstm.param(), &head.param()}; }
  Embedding embed;
  Lstm lstm;
  Linear head;
};

CharConfig read_char_checkpoint(const std::string& path, io::SafeTensors* out) {
  *out = io::read_safetensors(path);
  if (out->metadata["format"] != "openrnn-checkpoint-v1")
    throw io::FormatError(path + ": not an openrnn checkpoint (metadata format is \"" + out->metadata["format"] + "\")");
  CharConfig c;
  try {
    c = CharConfig::from_json(io::Json::parse(out->meta("config", path)));
  } catch (const std::exception& e) {
    throw io::FormatError(path + ": bad config: " + e.what());
  }
  const io::Tensor& v = out->get("data.vocab", path);
  if (v.dtype != io::DType::U8 || v.shape.size() != 1 || v.data.size() < 2)
    throw io::FormatError(path + ": data.vocab must be a U8 vector of at least 2 characters");
  c.vocab = v.data;
  return c;
}

}  // namespace

int cmd_char_train(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"device", "algo", "threads", "layers", "hidden", "embed", "dropout", "steps", "seq-len", "batch",
                   "seed", "val-frac", "optim", "lr", "lr-decay", "decay-every", "clip", "every", "save", "resume",
                   "metrics", "kill-at-step", "data"},
                  {"help"});
  if (args.has("help")) {
    std::fputs(kTrainUsage, stdout);
    return 0;
  }
  if (args.positional().size() > 1) throw UsageError("char train takes one text FILE");
  std::string file;
  if (args.positional().empty()) {
    const std::string root = data_root(args.str("data", ""));
    require_data_files(root, "tinyshakespeare", {"input.txt"});
    file = root + "/tinyshakespeare/input.txt";
  } else {
    file = args.positional()[0];
  }
  const std::string resume = args.str("resume", "");

  CharConfig cfg;
  io::SafeTensors ckpt;
  long step = 0, cursor = 0;
  if (!resume.empty()) {
    for (const char* o : {"layers", "hidden", "embed", "dropout", "seq-len", "batch", "seed", "val-frac", "optim",
                          "lr", "lr-decay", "decay-every", "clip"})
      if (args.has(o))
        throw UsageError(std::string("--") + o + " cannot be given with --resume (it is taken from the checkpoint)");
    cfg = read_char_checkpoint(resume, &ckpt);
    step = parse_meta_long(ckpt.meta("step", resume), "step");
    cursor = parse_meta_long(ckpt.meta("cursor", resume), "cursor");
  } else {
    cfg.layers = static_cast<int>(args.integer("layers", 2, 1, 64));
    cfg.hidden = static_cast<int>(args.integer("hidden", 512, 1, 65536));
    cfg.embed = static_cast<int>(args.integer("embed", 64, 1, 65536));
    cfg.dropout = args.real("dropout", 0.3, 0.0, 0.95);
    cfg.seq_len = static_cast<int>(args.integer("seq-len", 100, 1, 1000000));
    cfg.batch = static_cast<int>(args.integer("batch", 64, 1, 1000000));
    cfg.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
    cfg.val_frac = args.real("val-frac", 0.1, 0.0, 0.5);
    if (!optim_from_name(args.str("optim", "adam"), &cfg.opt.kind))
      throw UsageError("--optim must be adam, rmsprop or sgd");
    cfg.opt.lr = args.real("lr", 2e-3, 0.0, 10.0);
    cfg.opt.decay = args.real("lr-decay", 0.5, 0.0, 1.0);
    cfg.opt.decay_every = args.integer("decay-every", 1500, 0, 1L << 40);
    cfg.opt.clip = args.real("clip", 5.0, 0.0, 1e9);
  }
  // On resume, the step target and report interval default to the interrupted run's.
  const long steps = args.integer(
      "steps", resume.empty() ? 2000 : parse_meta_long(ckpt.meta("steps", resume), "steps"), 1, 1L << 40);
  const long every = args.integer(
      "every", resume.empty() ? 200 : parse_meta_long(ckpt.meta("every", resume), "every"), 1, 1L << 40);
  const long kill_at = args.integer("kill-at-step", 0, 0, 1L << 40);
  const std::string save = args.str("save", "");
  const openrnn_algo algo = parse_algo(args.str("algo", "auto"));

  // ---- data ----
  io::CharCorpus corpus = io::load_char_corpus(file);
  if (!resume.empty()) {
    if (corpus.ids.size() != cfg.text_bytes || corpus.vocab != cfg.vocab)
      throw std::runtime_error(file + " is not the text the checkpoint " + resume + " was trained on (" +
                               std::to_string(corpus.ids.size()) + " bytes, " + std::to_string(corpus.vocab.size()) +
                               " distinct; the checkpoint expects " + std::to_string(cfg.text_bytes) + " bytes, " +
                               std::to_string(cfg.vocab.size()) + " distinct)");
  } else {
    cfg.vocab = corpus.vocab;
    cfg.text_bytes = corpus.ids.size();
  }
  const int T = cfg.seq_len, B = cfg.batch, V = static_cast<int>(cfg.vocab.size()), H = cfg.hidden,
            L = cfg.layers, E = cfg.embed;
  const size_t n_val = static_cast<size_t>(static_cast<double>(corpus.ids.size()) * cfg.val_frac);
  const size_t n_train = corpus.ids.size() - n_val;
  const long stream_len = static_cast<long>(n_train / B);       // per training stream
  const long val_stream_len = static_cast<long>(n_val / B);     // per validation stream
  if (stream_len < T + 1)
    throw std::runtime_error(file + ": the training split (" + std::to_string(n_train) + " characters) is too short for " +
                             std::to_string(B) + " streams of --seq-len " + std::to_string(T) + " + 1");
  if (n_val > 0 && val_stream_len < 2)
    throw std::runtime_error(file + ": the validation split (" + std::to_string(n_val) + " characters) is too short for " +
                             std::to_string(B) + " streams; lower --batch or raise --val-frac");

  // ---- model ----
  DeviceContext dev = make_device(args.str("device", "cpu"));
  if (args.has("threads") && !dev.ops->is_cuda())
    dev.handle->set_num_threads(static_cast<int>(args.integer("threads", 1, 1, 1024)));
  Ops& ops = *dev.ops;
  // One seed drives every draw: first the dropout key, then the initialisation (embedding, LSTM, head).
  Rng rng(cfg.seed);
  const uint64_t key = rng.next();
  if (resume.empty()) cfg.dropout_seed = key;
  CharModel model(dev, cfg, algo, rng);
  CharModel* m = &model;
  Optimizer opt(ops, cfg.opt, m->params());

  DevArray<float> h_cur(ops, static_cast<size_t>(L) * B * H), c_cur(ops, static_cast<size_t>(L) * B * H),
      h_next(ops, static_cast<size_t>(L) * B * H), c_next(ops, static_cast<size_t>(L) * B * H);
  if (!resume.empty()) {
    load_params(ckpt, opt, resume);
    opt.set_steps(step);
    if (!rng.set_state_string(ckpt.meta("rng", resume))) throw io::FormatError(resume + ": bad rng state");
    const std::vector<int64_t> sshape{L, B, H};
    for (const char* name : {"state.h", "state.c"}) {
      const io::Tensor& t = ckpt.get(name, resume);
      if (t.dtype != io::DType::F32 || t.shape != sshape)
        throw io::FormatError(resume + ": " + name + " must be F32 [layers, batch, hidden]");
    }
    if (cursor < 0 || cursor > stream_len) throw io::FormatError(resume + ": cursor out of range");
    h_cur.upload(reinterpret_cast<const float*>(ckpt.get("state.h").data.data()));
    c_cur.upload(reinterpret_cast<const float*>(ckpt.get("state.c").data.data()));
  }
  std::unique_ptr<MetricsFile> metrics;
  if (args.has("metrics")) metrics = std::make_unique<MetricsFile>(args.str("metrics", ""), !resume.empty(), step);

  auto checkpoint = [&](const std::string& path) {
    io::SafeTensors out;
    save_params(out, opt);
    std::vector<float> h(h_cur.size()), c(c_cur.size());
    h_cur.download(h.data());
    c_cur.download(c.data());
    out.tensors["state.h"] = io::Tensor::from_f32(h.data(), {L, B, H});
    out.tensors["state.c"] = io::Tensor::from_f32(c.data(), {L, B, H});
    out.tensors["data.vocab"] = io::Tensor::from_u8(cfg.vocab.data(), {static_cast<int64_t>(cfg.vocab.size())});
    out.metadata["format"] = "openrnn-checkpoint-v1";
    out.metadata["config"] = cfg.to_json().dump();
    out.metadata["step"] = std::to_string(step);
    out.metadata["cursor"] = std::to_string(cursor);
    out.metadata["steps"] = std::to_string(steps);
    out.metadata["every"] = std::to_string(every);
    out.metadata["rng"] = rng.state_string();
    io::write_safetensors_atomic(path, out);
  };

  // ---- buffers: ids [T, B] sequence-major ----
  const size_t TB = static_cast<size_t>(T) * B;
  DevArray<int32_t> ids(ops, TB), targets(ops, TB);
  DevArray<float> x(ops, TB * E), dx(ops, TB * E), y(ops, TB * H), dy(ops, TB * H), logits(ops, TB * V);
  std::vector<int32_t> ids_h(TB), tgt_h(TB);
  std::vector<float> row_loss(TB);

  auto gather = [&](const int32_t* base, long slen, long pos, int t_len) {
    for (int t = 0; t < t_len; ++t)
      for (int b = 0; b < B; ++b) {
        const size_t i = static_cast<size_t>(b) * slen + pos + t;
        ids_h[static_cast<size_t>(t) * B + b] = base[i];
        tgt_h[static_cast<size_t>(t) * B + b] = base[i + 1];
      }
    ops.to_device(ids.get(), ids_h.data(), sizeof(int32_t) * t_len * B);
    ops.to_device(targets.get(), tgt_h.data(), sizeof(int32_t) * t_len * B);
  };

  // Mean loss (nats/char) over the validation split: B streams read in chunks of T from zero states.
  auto validate = [&]() -> double {
    if (n_val == 0) return NAN;
    const int32_t* base = corpus.ids.data() + n_train;
    DevArray<float> vh(ops, static_cast<size_t>(L) * B * H), vc(ops, static_cast<size_t>(L) * B * H),
        vh2(ops, static_cast<size_t>(L) * B * H), vc2(ops, static_cast<size_t>(L) * B * H);
    double sum = 0;
    long count = 0;
    for (long pos = 0; pos + 1 < val_stream_len; pos += T) {
      const int t_len = static_cast<int>(std::min<long>(T, val_stream_len - 1 - pos));
      gather(base, val_stream_len, pos, t_len);
      const size_t n = static_cast<size_t>(t_len) * B;
      m->embed.forward(ids.get(), static_cast<int>(n), x.get());
      m->lstm.forward(false, t_len, B, x.get(), y.get(), vh.get(), vh2.get(), vc.get(), vc2.get());
      m->head.forward(y.get(), static_cast<int>(n), logits.get());
      ops.softmax_xent(logits.get(), targets.get(), static_cast<int>(n), V, 0.f, nullptr, row_loss.data(), nullptr);
      for (size_t i = 0; i < n; ++i) sum += row_loss[i];
      count += static_cast<long>(n);
      std::swap(vh, vh2);
      std::swap(vc, vc2);
    }
    return sum / std::max<long>(count, 1);
  };

  Progress progress;
  std::printf("openrnn char: %s, %zu train / %zu val chars, vocab %d, embed %d, LSTM %dx%d (dropout %g) on %s "
              "(algo %s), seq %d x batch %d, %s lr %g, %ld steps%s\n",
              file.c_str(), n_train, n_val, V, E, L, H, cfg.dropout, dev.name.c_str(),
              m->lstm.algo_name(T, B).c_str(), T, B, optim_name(cfg.opt.kind), cfg.opt.lr, steps,
              resume.empty() ? "" : (", resumed at step " + std::to_string(step)).c_str());
  std::fflush(stdout);

  double loss_sum = 0;
  long loss_count = 0;
  auto t_report = std::chrono::steady_clock::now();
  const auto t_start = t_report;
  const long step0 = step;
  const size_t n = TB;
  while (step < steps) {
    if (cursor + T + 1 > stream_len) {  // a stream ran out: new epoch, fresh states
      cursor = 0;
      h_cur.zero();
      c_cur.zero();
    }
    gather(corpus.ids.data(), stream_len, cursor, T);
    m->lstm.set_dropout_offset(static_cast<uint64_t>(step));
    opt.zero_grad();
    m->embed.forward(ids.get(), static_cast<int>(n), x.get());
    m->lstm.forward(true, T, B, x.get(), y.get(), h_cur.get(), h_next.get(), c_cur.get(), c_next.get());
    if (cfg.dropout > 0) ops.dropout(y.get(), n, H, cfg.dropout_seed, static_cast<uint64_t>(step), L, cfg.dropout);
    m->head.forward(y.get(), static_cast<int>(n), logits.get());
    ops.softmax_xent(logits.get(), targets.get(), static_cast<int>(n), V, 1.0f / static_cast<float>(n), logits.get(),
                     row_loss.data(), nullptr);
    m->head.backward(y.get(), logits.get(), static_cast<int>(n), dy.get());
    if (cfg.dropout > 0) ops.dropout(dy.get(), n, H, cfg.dropout_seed, static_cast<uint64_t>(step), L, cfg.dropout);
    m->lstm.backward(T, B, x.get(), dy.get(), nullptr, nullptr, dx.get());
    m->embed.backward(ids.get(), static_cast<int>(n), dx.get());
    opt.step();
    std::swap(h_cur, h_next);  // truncated BPTT: carry the state, not its gradient
    std::swap(c_cur, c_next);
    cursor += T;
    ++step;
    double batch_loss = 0;
    for (size_t i = 0; i < n; ++i) batch_loss += row_loss[i];
    loss_sum += batch_loss / n;
    ++loss_count;

    const auto now = std::chrono::steady_clock::now();
    const double el = std::chrono::duration<double>(now - t_start).count();
    const double cps = (step - step0) * static_cast<double>(n) / std::max(el, 1e-9);
    char live[256];
    std::snprintf(live, sizeof live, "step %ld/%ld  loss %.4f  %.0f chars/s  ETA %s", step, steps, batch_loss / n, cps,
                  format_duration((steps - step) * static_cast<double>(n) / cps).c_str());
    progress.update(live);

    if (step % every == 0 || step == steps) {
      const double seconds = std::chrono::duration<double>(now - t_report).count();
      const double val = validate();
      const double train_loss = loss_sum / std::max<long>(loss_count, 1);
      char line[320];
      std::snprintf(line, sizeof line, "step=%ld loss=%.6f val_loss=%.6f lr=%.6g chars_per_sec=%.0f seconds=%.2f",
                    step, train_loss, val, opt.lr(), cps, seconds);
      progress.print(line);
      if (metrics)
        metrics->write("{\"step\":" + std::to_string(step) + ",\"loss\":" + io::json_number(train_loss) +
                       ",\"val_loss\":" + io::json_number(val) + ",\"lr\":" + io::json_number(opt.lr()) +
                       ",\"seconds\":" + io::json_number(seconds) + ",\"chars_per_sec\":" + io::json_number(cps) +
                       "}");
      loss_sum = 0;
      loss_count = 0;
      t_report = std::chrono::steady_clock::now();
      if (!save.empty()) checkpoint(save);
    }
    maybe_kill_at(step, kill_at);
  }
  std::printf("done: %ld steps%s\n", step, save.empty() ? "" : (", checkpoint " + save).c_str());
  return 0;
}

int cmd_char_sample(const std::vector<std::string>& argv) {
  const Args args(argv, {"checkpoint", "prime", "length", "temperature", "top-k", "seed", "device", "algo"}, {"help"});
  if (args.has("help")) {
    std::fputs(kSampleUsage, stdout);
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument \"" + args.positional()[0] + "\"");
  if (!args.has("checkpoint")) throw UsageError("--checkpoint PATH is required");
  const std::string path = args.str("checkpoint", "");
  const long length = args.integer("length", 500, 0, 1L << 32);
  const double temperature = args.real("temperature", 0.8, 1e-6, 100.0);
  const long top_k = args.integer("top-k", 0, 0, 1 << 20);
  io::SafeTensors ckpt;
  CharConfig cfg = read_char_checkpoint(path, &ckpt);
  const int V = static_cast<int>(cfg.vocab.size()), H = cfg.hidden, L = cfg.layers;
  std::string prime = args.str("prime", "");
  if (prime.empty()) {
    const bool has_newline = std::find(cfg.vocab.begin(), cfg.vocab.end(), '\n') != cfg.vocab.end();
    prime = std::string(1, has_newline ? '\n' : static_cast<char>(cfg.vocab[0]));
  }
  const std::vector<int32_t> prime_ids = io::encode_chars(prime, cfg.vocab);

  DeviceContext dev = make_device(args.str("device", "cpu"));
  Ops& ops = *dev.ops;
  Rng init_rng(cfg.seed);
  CharModel model(dev, cfg, parse_algo(args.str("algo", "auto")), init_rng);
  OptimConfig none = cfg.opt;
  Optimizer holder(ops, none, model.params());
  load_params(ckpt, holder, path);

  Rng rng(static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX)));
  const int P = static_cast<int>(prime_ids.size());
  DevArray<int32_t> ids(ops, static_cast<size_t>(P));
  DevArray<float> x(ops, static_cast<size_t>(P) * cfg.embed), y(ops, static_cast<size_t>(P) * H),
      h0(ops, static_cast<size_t>(L) * H), c0(ops, static_cast<size_t>(L) * H), h1(ops, static_cast<size_t>(L) * H),
      c1(ops, static_cast<size_t>(L) * H), logits(ops, static_cast<size_t>(V));
  std::fwrite(prime.data(), 1, prime.size(), stdout);
  ids.upload(prime_ids.data());
  std::vector<float> z(static_cast<size_t>(V)), prob(static_cast<size_t>(V));
  int steps_in = P;
  for (long i = 0; i < length; ++i) {
    // Feed the pending ids (the prime, then each sampled character) and read the last step's logits.
    model.embed.forward(ids.get(), steps_in, x.get());
    model.lstm.forward(false, steps_in, 1, x.get(), y.get(), h0.get(), h1.get(), c0.get(), c1.get());
    std::swap(h0, h1);
    std::swap(c0, c1);
    model.head.forward(y.get() + static_cast<size_t>(steps_in - 1) * H, 1, logits.get());
    logits.download(z.data());
    // Temperature, optional top-k, softmax in double, then one inverse-CDF draw.
    std::vector<int> order(static_cast<size_t>(V));
    for (int v = 0; v < V; ++v) order[static_cast<size_t>(v)] = v;
    double mx = -INFINITY;
    for (float v : z) mx = std::max(mx, static_cast<double>(v) / temperature);
    std::vector<double> w(static_cast<size_t>(V));
    for (int v = 0; v < V; ++v) w[static_cast<size_t>(v)] = std::exp(z[static_cast<size_t>(v)] / temperature - mx);
    if (top_k > 0 && top_k < V) {
      std::vector<double> sorted = w;
      std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<double>());
      const double kth = sorted[static_cast<size_t>(top_k - 1)];
      for (double& v : w)
        if (v < kth) v = 0;
    }
    double total = 0;
    for (double v : w) total += v;
    double r = rng.uniform() * total;
    int pick = V - 1;
    for (int v = 0; v < V; ++v) {
      if (r < w[static_cast<size_t>(v)]) {
        pick = v;
        break;
      }
      r -= w[static_cast<size_t>(v)];
    }
    while (w[static_cast<size_t>(pick)] == 0 && pick > 0) --pick;
    std::fputc(cfg.vocab[static_cast<size_t>(pick)], stdout);
    const int32_t id = pick;
    ops.to_device(ids.get(), &id, sizeof id);
    steps_in = 1;
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace openrnn::app
