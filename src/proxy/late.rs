//! Servers that start after the editor's `initialize` answer (slower than the wait, a language
//! whose first file is opened later, a restart after a crash with other capabilities): their
//! features are registered with the editor by `client/registerCapability` (LSP 3.17 "Register
//! Capability") once the editor sent `initialized`.
//!
//! - One registration per feature ([`capabilities::FEATURES`]) the `initialize` answer did not
//!   advertise, its `registerOptions` from the server's static capability, its
//!   `documentSelector` limited to the server's languages not already covered by another late
//!   registration of the feature (two servers of one language never both register completion);
//!   `workspace/executeCommand` registers the commands nobody offered yet.
//! - Only where the editor declared `dynamicRegistration` for the feature; the others are named
//!   in one `window/showMessage` (Warning) per server and set of features.
//! - Semantic tokens: the registration's legend is the one the editor decodes with, and the
//!   server's tokens are mapped onto it ([`LegendMap`]). When `initialize` advertised no
//!   tokens, the first late server's legend becomes the editor's; a later server whose token
//!   types that legend lacks gets no tokens registration, and the editor's log says so.
//! - A server that exits has its registrations removed (`client/unregisterCapability`, in
//!   [`super::upstream`]); then, and whenever a server starts, the registrations are reconciled
//!   again, so a replacement registers what it offers now.
//!
//! Requests for registered features are routed like any other, by each running server's
//! capabilities ([`super::route`]).

use std::sync::Arc;

use serde_json::{Value, json};

use super::capabilities::{FEATURES, Feature};
use super::translate::LegendMap;
use super::{Session, Shared};
use crate::backends::LspClient;

/// A registration filepuff made for a late server.
#[derive(Debug, Clone)]
pub(crate) struct Registered {
    /// The server instance whose capability it came from.
    pub serial: u64,
    pub method: &'static str,
    /// The `documentSelector`'s languages (document features).
    pub languages: Vec<String>,
    /// The commands (`workspace/executeCommand`).
    pub commands: Vec<String>,
}

/// A running server as [`plan`] sees it.
pub(crate) struct Server<'a> {
    pub serial: u64,
    pub name: &'a str,
    /// The LSP language ids it serves.
    pub languages: Vec<String>,
    /// Its `ServerCapabilities` JSON.
    pub capabilities: &'a Value,
}

/// One registration to make.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    pub serial: u64,
    pub feature: Feature,
    /// `registerOptions` without the `documentSelector`.
    pub options: Value,
    pub languages: Vec<String>,
    pub commands: Vec<String>,
}

/// What [`plan`] decided.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Plan {
    pub register: Vec<Planned>,
    /// Per server name, the features the editor cannot be given (no dynamic registration).
    pub missing: Vec<(String, Vec<&'static str>)>,
}

/// What to register for `servers` (in server order: the first server of a language registers
/// a feature for it) given the editor's `initialize` answer (`advertised`), the editor's
/// `ClientCapabilities` (`editor`), the registrations already made, and the commands already
/// known to the editor (advertised, or registered by servers themselves).
pub(crate) fn plan(
    advertised: &Value,
    editor: &Value,
    servers: &[Server<'_>],
    registered: &[Registered],
    known_commands: &[String],
) -> Plan {
    let mut plan = Plan::default();
    let mut covered: Vec<Registered> = registered.to_vec();
    let advertised_commands = commands_of(advertised);
    for server in servers {
        let mut missing = Vec::new();
        for feature in FEATURES {
            if !feature.offered_by(server.capabilities) {
                continue;
            }
            let mut options = feature.register_options(server.capabilities);
            let mut languages = Vec::new();
            let mut commands = Vec::new();
            if feature.method == "workspace/executeCommand" {
                commands = commands_of(server.capabilities)
                    .into_iter()
                    .filter(|c| {
                        !advertised_commands.contains(c)
                            && !known_commands.contains(c)
                            && !covered.iter().any(|r| r.commands.contains(c))
                    })
                    .collect();
                if commands.is_empty() {
                    continue;
                }
                options = json!({ "commands": commands });
            } else if feature.offered_by(advertised) {
                continue;
            } else if feature.document {
                languages = server
                    .languages
                    .iter()
                    .filter(|l| !covered.iter().any(|r| r.method == feature.method && r.languages.contains(l)))
                    .cloned()
                    .collect();
                if languages.is_empty() {
                    continue;
                }
            } else if covered.iter().any(|r| r.method == feature.method) {
                continue;
            }
            if !feature.editor_registers(editor) {
                if feature.editor_knows(editor) {
                    missing.push(feature.name());
                }
                continue;
            }
            covered.push(Registered {
                serial: server.serial,
                method: feature.method,
                languages: languages.clone(),
                commands: commands.clone(),
            });
            plan.register.push(Planned { serial: server.serial, feature: *feature, options, languages, commands });
        }
        if !missing.is_empty() {
            plan.missing.push((server.name.to_owned(), missing));
        }
    }
    plan
}

fn commands_of(capabilities: &Value) -> Vec<String> {
    capabilities
        .pointer("/executeCommandProvider/commands")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The LSP language ids server `name` serves (from its spec).
pub(crate) fn server_languages(session: &Session, name: &str) -> Vec<String> {
    session
        .engine
        .backends()
        .server_specs()
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.languages.iter().map(|l| l.lsp_id().to_owned()).collect())
        .unwrap_or_default()
}

/// A `documentSelector` for `languages`.
pub(crate) fn selector(languages: &[String]) -> Value {
    Value::Array(languages.iter().map(|l| json!({ "language": l })).collect())
}

/// Makes the registrations the running servers need now (see the module documentation).
/// Does nothing before the editor's `initialized`.
pub(crate) fn reconcile(shared: &Shared, session: &Session) {
    let Some(advertised) = session.advertised.get() else { return };
    let backends = session.engine.backends();
    let order: Vec<String> = backends.server_specs().iter().map(|s| s.name.clone()).collect();
    let mut clients: Vec<Arc<LspClient>> = backends.running().into_iter().filter(|c| c.is_alive()).collect();
    clients.sort_by_key(|c| (order.iter().position(|n| *n == c.name), c.serial));
    let servers: Vec<Server<'_>> = clients
        .iter()
        .map(|c| Server {
            serial: c.serial,
            name: &c.name,
            languages: server_languages(session, &c.name),
            capabilities: &c.capabilities_json,
        })
        .collect();

    let mut registrations = Vec::new();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    {
        let mut state = shared.upstream.lock();
        if !state.editor_initialized {
            return;
        }
        let known: Vec<String> = state.commands.keys().cloned().collect();
        let plan = plan(advertised, &session.editor_capabilities, &servers, &state.late, &known);
        for mut planned in plan.register {
            let Some(client) = clients.iter().find(|c| c.serial == planned.serial) else { continue };
            if planned.feature.method == "textDocument/semanticTokens" {
                match tokens_options(session, client, planned.options) {
                    Ok(options) => planned.options = options,
                    Err(note) => {
                        if state.noted.insert(note.clone()) {
                            notes.push(note);
                        }
                        continue;
                    }
                }
            }
            if planned.feature.document
                && let Some(options) = planned.options.as_object_mut()
            {
                options.insert("documentSelector".into(), selector(&planned.languages));
            }
            state.next_late += 1;
            let id = format!("filepuff/{}/late/{}", planned.serial, state.next_late);
            state
                .registrations
                .entry(planned.serial)
                .or_default()
                .push((id.clone(), planned.feature.method.to_owned()));
            state.late.push(Registered {
                serial: planned.serial,
                method: planned.feature.method,
                languages: planned.languages,
                commands: planned.commands,
            });
            tracing::info!(server = %client.name, "registering {} with the editor", planned.feature.method);
            registrations
                .push(json!({ "id": id, "method": planned.feature.method, "registerOptions": planned.options }));
        }
        for (name, missing) in plan.missing {
            if state.warned.get(&name) != Some(&missing) {
                warnings.push(missing_message(session, &name, &missing));
                state.warned.insert(name, missing);
            }
        }
    }
    if !registrations.is_empty() {
        let answer = shared.request_editor("client/registerCapability", json!({ "registrations": registrations }));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = answer.await {
                    tracing::warn!("the editor refused client/registerCapability: {}", err.message);
                }
            });
        }
    }
    for warning in warnings {
        tracing::warn!("{warning}");
        shared.notify_editor("window/showMessage", json!({ "type": 2, "message": warning }));
    }
    for note in notes {
        tracing::warn!("{note}");
        shared.log_to_editor(2, note);
    }
}

/// Maps `client`'s semantic-token legend onto the editor's anew (a server restarted after
/// `initialize` may have another one), and logs to the editor, once, the token types the
/// editor's legend lacks (those tokens are dropped).
pub(crate) fn map_legend(shared: &Shared, session: &Session, client: &LspClient) {
    let (Some(legend), Some(server_legend)) =
        (session.legend.get(), client.capabilities_json.pointer("/semanticTokensProvider/legend"))
    else {
        return;
    };
    let map = LegendMap::new(server_legend, legend);
    let unmapped = unmapped_types(&map, server_legend);
    session.legend_maps.lock().insert(client.name.clone(), map);
    // Tokens not advertised at `initialize` are registered by [`reconcile`], which says so
    // itself when they cannot be.
    let advertised = session.advertised.get().is_some_and(|a| a.get("semanticTokensProvider").is_some());
    if advertised && !unmapped.is_empty() {
        let note = format!(
            "filepuff: {} started after the editor's initialize; its semantic tokens of types {} are left out (the \
             editor's legend lacks them)",
            client.name,
            unmapped.join(", ")
        );
        if shared.upstream.lock().noted.insert(note.clone()) {
            tracing::warn!("{note}");
            shared.log_to_editor(2, note);
        }
    }
}

/// The token types of `server_legend` that `map` drops.
fn unmapped_types<'a>(map: &LegendMap, server_legend: &'a Value) -> Vec<&'a str> {
    map.types
        .iter()
        .zip(server_legend.get("tokenTypes").and_then(Value::as_array).into_iter().flatten())
        .filter(|(to, _)| to.is_none())
        .filter_map(|(_, name)| name.as_str())
        .collect()
}

/// The `window/showMessage` text for features of server `name` the editor cannot be given.
fn missing_message(session: &Session, name: &str, missing: &[&str]) -> String {
    let wait = session.engine.backends().config();
    let wait_ms = wait.initialize_wait_ms.unwrap_or(wait.request_timeout_ms.max(1000));
    format!(
        "filepuff: {name} started after the editor's initialize, and this editor does not accept capabilities \
         registered later (dynamicRegistration), so {} of {name} {} missing until the filepuff language server is \
         restarted (if {name} is slow to start, raise [lsp] initialize_wait_ms, now {wait_ms} ms)",
        missing.join(", "),
        if missing.len() == 1 { "is" } else { "are" },
    )
}

/// The semantic-tokens `registerOptions` for `client`: `options` with the editor-facing legend
/// (see the module documentation), deltas only when tokens pass through untouched. Errors: a
/// note saying why its tokens are left out.
fn tokens_options(session: &Session, client: &LspClient, mut options: Value) -> Result<Value, String> {
    let Some(server_legend) = client.capabilities_json.pointer("/semanticTokensProvider/legend") else {
        return Err(format!("filepuff: the semantic tokens of {} are left out: it gave no legend", client.name));
    };
    let legend = session.legend.get_or_init(|| server_legend.clone()).clone();
    let map = LegendMap::new(server_legend, &legend);
    let unmapped = unmapped_types(&map, server_legend);
    if !unmapped.is_empty() {
        return Err(format!(
            "filepuff: the semantic tokens of {} are left out: the editor's legend (given before {} started) lacks \
             its token types {}",
            client.name,
            client.name,
            unmapped.join(", ")
        ));
    }
    let pass_through = map.is_identity() && client.encoding == session.encoding;
    session.legend_maps.lock().insert(client.name.clone(), map);
    if let Some(options) = options.as_object_mut() {
        options.insert("legend".into(), legend);
        if !pass_through && options.get("full").is_some_and(Value::is_object) {
            options.insert("full".into(), Value::Bool(true));
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server<'a>(serial: u64, name: &'a str, languages: &[&str], capabilities: &'a Value) -> Server<'a> {
        Server { serial, name, languages: languages.iter().map(|l| (*l).to_owned()).collect(), capabilities }
    }

    fn methods(plan: &Plan) -> Vec<(u64, &'static str, Vec<String>)> {
        plan.register.iter().map(|p| (p.serial, p.feature.method, p.languages.clone())).collect()
    }

    #[test]
    fn only_features_the_initialize_answer_lacked_are_registered_once_per_language() {
        let advertised = json!({ "hoverProvider": true, "executeCommandProvider": { "commands": ["go.test"] } });
        let editor = json!({
            "textDocument": {
                "hover": { "dynamicRegistration": true },
                "definition": { "dynamicRegistration": true },
                "completion": { "dynamicRegistration": true },
            },
            "workspace": { "executeCommand": { "dynamicRegistration": true } },
        });
        let basedpyright = json!({
            "hoverProvider": true,
            "definitionProvider": true,
            "completionProvider": { "triggerCharacters": ["."] },
            "executeCommandProvider": { "commands": ["go.test", "pyright.organizeimports"] },
        });
        let ruff = json!({ "completionProvider": { "triggerCharacters": ["#"] }, "definitionProvider": true });
        let servers =
            [server(7, "basedpyright", &["python"], &basedpyright), server(8, "ruff", &["python", "toml"], &ruff)];
        let plan = plan(&advertised, &editor, &servers, &[], &[]);
        let python = vec!["python".to_owned()];
        let toml = vec!["toml".to_owned()];
        assert_eq!(
            methods(&plan),
            [
                (7, "textDocument/definition", python.clone()),
                (7, "textDocument/completion", python.clone()),
                (7, "workspace/executeCommand", vec![]),
                (8, "textDocument/definition", toml.clone()),
                (8, "textDocument/completion", toml),
            ]
        );
        assert_eq!(plan.register[1].options, json!({ "triggerCharacters": ["."] }));
        assert_eq!(plan.register[2].options, json!({ "commands": ["pyright.organizeimports"] }));
        assert!(plan.missing.is_empty());

        // Already registered (an earlier reconcile): nothing again.
        let registered: Vec<Registered> = plan
            .register
            .iter()
            .map(|p| Registered {
                serial: p.serial,
                method: p.feature.method,
                languages: p.languages.clone(),
                commands: p.commands.clone(),
            })
            .collect();
        let again = super::plan(&advertised, &editor, &servers, &registered, &[]);
        assert_eq!(again, Plan::default());
        // The first server gone (its registrations removed): the second takes Python over.
        let rest: Vec<Registered> = registered.into_iter().filter(|r| r.serial != 7).collect();
        let after = super::plan(&advertised, &editor, &servers[1..], &rest, &[]);
        assert_eq!(
            methods(&after),
            [(8, "textDocument/definition", python.clone()), (8, "textDocument/completion", python)]
        );
    }

    #[test]
    fn features_the_editor_cannot_register_are_named() {
        let editor = json!({
            "textDocument": {
                "hover": { "dynamicRegistration": false },
                "definition": {},
                "references": { "dynamicRegistration": true },
            },
        });
        let fake = json!({ "hoverProvider": true, "definitionProvider": true, "referencesProvider": true, "monikerProvider": true });
        let plan = plan(&json!({}), &editor, &[server(3, "fake", &["go"], &fake)], &[], &[]);
        assert_eq!(methods(&plan), [(3, "textDocument/references", vec!["go".to_owned()])]);
        // Moniker: the editor does not know the feature at all, so it is not missed.
        assert_eq!(plan.missing, [("fake".to_owned(), vec!["definition", "hover"])]);
    }
}
