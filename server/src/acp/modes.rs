//! The session modes an ACP client can pick (`session/set_mode`): edit freely (the
//! default, as `agentls run`), ask before each edit (a permission request with the
//! diff), or read-only (no tool that changes anything is offered).

use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};
use agentls_agent::Mode;

/// One mode: id, name, description, the session's mode, whether edits are asked about.
pub struct AcpMode {
    pub id: &'static str,
    name: &'static str,
    description: &'static str,
    pub mode: Mode,
    pub ask_edits: bool,
}

pub const MODES: [AcpMode; 3] = [
    AcpMode {
        id: "edit",
        name: "Edit freely",
        description: "Edits land as the agent makes them, checked against your buffers",
        mode: Mode::Agent,
        ask_edits: false,
    },
    AcpMode {
        id: "ask_before_edits",
        name: "Ask before edits",
        description: "Each edit waits for your permission, with its diff",
        mode: Mode::Agent,
        ask_edits: true,
    },
    AcpMode {
        id: "read_only",
        name: "Read-only",
        description: "The agent reads and answers; nothing is changed or run",
        mode: Mode::Ask,
        ask_edits: false,
    },
];

/// The protocol's name of `mode`, for the session's queue.
pub fn wire(mode: Mode) -> agentls_protocol::agent::Mode {
    match mode {
        Mode::Agent => agentls_protocol::agent::Mode::Agent,
        Mode::Ask => agentls_protocol::agent::Mode::Ask,
        Mode::Plan => agentls_protocol::agent::Mode::Plan,
    }
}

/// The mode called `id`.
pub fn find(id: &str) -> Option<&'static AcpMode> {
    MODES.iter().find(|m| m.id == id)
}

/// The modes, `current` selected, as the protocol shows them.
pub fn state(current: &str) -> SessionModeState {
    SessionModeState::new(
        current.to_owned(),
        MODES
            .iter()
            .map(|m| SessionMode::new(m.id, m.name).description(m.description.to_owned()))
            .collect(),
    )
}
