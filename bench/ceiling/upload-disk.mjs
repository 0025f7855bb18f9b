// The upload ceiling (bench/upload.ts): a bare node:http server that streams each request's body
// to a new file in the folder given (`--dir`), fsyncs it at the end and answers 201 with its size.
// No framework, no hash, no database: what streaming a body to disk costs on the machine.
// Prints one JSON line `{ "url": … }` once it listens on a loopback port.
import { createWriteStream } from "node:fs";
import { open, unlink } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";

const at = process.argv.indexOf("--dir");
if (at < 0) throw new Error("usage: upload-disk.mjs --dir <folder>");
const dir = process.argv[at + 1];
let n = 0;

const server = createServer(async (req, res) => {
  const path = join(dir, `upload-${n++}`);
  try {
    let size = 0;
    req.on("data", (c) => {
      size += c.length;
    });
    await pipeline(req, createWriteStream(path));
    const fh = await open(path, "r+");
    await fh.sync();
    await fh.close();
    res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ size }));
  } catch (err) {
    await unlink(path).catch(() => {});
    res.writeHead(500).end(String(err));
  }
});
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }));
});
