// The kvrace extension: starts `kvrace lsp` (the language server) for .kvr files.
//
// Everything the editor shows (diagnostics, hover, go to definition, references,
// outline, completion, formatting, quick fixes, the "check this spec" code lens)
// comes from the server; this file only starts it with the configured command.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function serverCommand() {
  const config = vscode.workspace.getConfiguration("kvrace");
  const words = config.get("server.command", ["kvrace", "lsp"]);
  const timeout = config.get("check.timeout", 30);
  return { command: words[0], args: [...words.slice(1), "--check-timeout", String(timeout)] };
}

async function activate(context) {
  const { command, args } = serverCommand();
  const server = { command, args, transport: TransportKind.stdio };
  client = new LanguageClient(
    "kvrace",
    "kvrace",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "kvrace" }, { scheme: "untitled", language: "kvrace" }] }
  );
  context.subscriptions.push(
    vscode.commands.registerCommand("kvrace.restartServer", async () => {
      if (client) {
        await client.restart();
      }
    })
  );
  await client.start();
}

async function deactivate() {
  if (client) {
    await client.stop();
  }
}

module.exports = { activate, deactivate };
