import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import type { ApiError } from './api.ts';

export function Page(props: { title: string; actions?: ReactNode; children: ReactNode }) {
  useEffect(() => {
    document.title = `${props.title} · Tollgate`;
  }, [props.title]);
  return (
    <section className="page">
      <header className="page-header">
        <h1 tabIndex={-1}>{props.title}</h1>
        {props.actions ? <div className="page-actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

export function Card(props: { title?: string; children: ReactNode; className?: string }) {
  return (
    <section className={`card ${props.className ?? ''}`}>
      {props.title ? <h2>{props.title}</h2> : null}
      {props.children}
    </section>
  );
}

/** An API error with its message; field errors are shown beside their fields by <Field>. */
export function ErrorMessage(props: { error: ApiError | null; fields?: string[] }) {
  if (!props.error) return null;
  const known = new Set(props.fields ?? []);
  const fields = Object.keys(props.error.fieldErrors);
  const other = Object.entries(props.error.fieldErrors).filter(([field]) => !known.has(field));
  const beside = fields.length - other.length;
  // Field errors are shown beside their fields; the banner is then one summary pointing at them,
  // not the service's generic "failed validation".
  const message =
    beside > 0 && other.length === 0
      ? `Check the ${beside === 1 ? 'field' : `${beside} fields`} marked below.`
      : other.length > 0 && props.error.code === 'validation_failed'
        ? 'Check what you entered:'
        : props.error.message;
  return (
    <div className="alert error" role="alert">
      <p>{message}</p>
      {other.length > 0 ? (
        <ul>
          {other.map(([field, messages]) => (
            <li key={field}>
              {field}: {messages.join(' ')}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Field(props: {
  label: string;
  name: string;
  error?: ApiError | null;
  hint?: string;
  children?: (id: string, describedBy: string | undefined) => ReactNode;
  type?: string;
  value?: string;
  onChange?: (value: string) => void;
  autoComplete?: string;
  required?: boolean;
  inputMode?: 'numeric' | 'email' | 'text';
}) {
  const id = useId();
  const messages = props.error?.fieldErrors[props.name] ?? [];
  const errorId = messages.length > 0 ? `${id}-error` : undefined;
  const hintId = props.hint ? `${id}-hint` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field ${messages.length > 0 ? 'invalid' : ''}`}>
      <label htmlFor={id}>{props.label}</label>
      {props.children ? (
        props.children(id, describedBy)
      ) : (
        <input
          id={id}
          name={props.name}
          type={props.type ?? 'text'}
          value={props.value ?? ''}
          onChange={(event) => props.onChange?.(event.target.value)}
          autoComplete={props.autoComplete}
          required={props.required}
          inputMode={props.inputMode}
          aria-invalid={messages.length > 0 || undefined}
          aria-describedby={describedBy}
        />
      )}
      {props.hint ? (
        <p className="hint" id={hintId}>
          {props.hint}
        </p>
      ) : null}
      {messages.length > 0 ? (
        <p className="field-error" id={errorId}>
          {messages.join(' ')}
        </p>
      ) : null}
    </div>
  );
}

export function Button(props: {
  children: ReactNode;
  onClick?: () => void;
  type?: 'button' | 'submit';
  kind?: 'primary' | 'secondary' | 'danger';
  pending?: boolean;
  disabled?: boolean;
  label?: string;
}) {
  return (
    <button
      type={props.type ?? 'button'}
      className={`button ${props.kind ?? 'secondary'}`}
      onClick={props.onClick}
      disabled={props.disabled || props.pending}
      aria-busy={props.pending || undefined}
      aria-label={props.label}
    >
      {props.pending ? <span className="spinner" aria-hidden="true" /> : null}
      {props.children}
    </button>
  );
}

export function Loading(props: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" /> {props.label ?? 'Loading…'}
    </p>
  );
}

export function Empty(props: { title: string; children: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{props.title}</p>
      <div>{props.children}</div>
    </div>
  );
}

/**
 * A secret shown once: it can be copied, and is hidden (removed from the page) once copied or
 * dismissed. It never reaches the URL, storage or the console.
 */
export function SecretBox(props: { secret: string; onDone: () => void; label: string }) {
  const [copied, setCopied] = useState(false);
  const box = useRef<HTMLElement>(null);
  useEffect(() => {
    box.current?.focus();
  }, []);
  async function copy() {
    try {
      await navigator.clipboard.writeText(props.secret);
    } catch {
      // Without clipboard access the user selects the text by hand; it stays until dismissed.
      return;
    }
    setCopied(true);
    setTimeout(props.onDone, 1_200);
  }
  return (
    <section className="secret" ref={box} tabIndex={-1} aria-label={props.label}>
      <p>
        <strong>{props.label}.</strong> Copy it now: it is hidden again once copied.
      </p>
      {copied ? (
        <p role="status">Copied to the clipboard. The secret is hidden again.</p>
      ) : (
        <>
          <code className="secret-value" data-testid="secret-value">
            {props.secret}
          </code>
          <div className="row">
            <Button kind="primary" onClick={copy}>
              Copy
            </Button>
            <Button onClick={props.onDone}>Hide</Button>
          </div>
        </>
      )}
    </section>
  );
}

/** A modal confirmation, focus kept inside and Escape cancelling. */
export function Confirm(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  pending?: boolean;
  error?: ApiError | null;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => element?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      className="dialog"
      aria-labelledby="confirm-title"
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <ErrorMessage error={props.error ?? null} />
      <div className="row end">
        <Button onClick={props.onCancel}>Cancel</Button>
        <Button kind="danger" onClick={props.onConfirm} pending={props.pending}>
          {props.confirmLabel}
        </Button>
      </div>
    </dialog>
  );
}

export function StateBadge(props: { state: string }) {
  return <span className={`badge state-${props.state}`}>{props.state}</span>;
}

/**
 * A table that may be wider than a phone: it scrolls sideways inside a labelled region that the
 * keyboard can reach, and says so on narrow screens (the first columns are the key ones).
 */
export function TableWrap(props: { label: string; children: ReactNode }) {
  return (
    <div className="table-scroll">
      <p className="scroll-hint" aria-hidden="true">
        Scroll sideways for more columns →
      </p>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolled region must be reachable by keyboard */}
      <section className="table-wrap" aria-label={props.label} tabIndex={0}>
        {props.children}
      </section>
    </div>
  );
}

/** A list read page by page, as MoreButton and ListTable take it. */
interface MoreList {
  hasMore: boolean;
  loadingMore: boolean;
  loadMore: () => void;
}

/** "Show more" (or `label`) under a list read page by page; nothing once every page is loaded. */
export function MoreButton(props: { list: MoreList; label?: string }) {
  if (!props.list.hasMore) return null;
  return (
    <p className="more">
      <Button onClick={props.list.loadMore} pending={props.list.loadingMore}>
        {props.label ?? 'Show more'}
      </Button>
    </p>
  );
}

/**
 * The shell of a list's table: a labelled region that scrolls sideways, a caption for screen
 * readers, the column heads, the rows given, and the button for the next page while there is one.
 */
export function ListTable(props: {
  label: string;
  caption: string;
  testId: string;
  columns: string[];
  list: MoreList;
  moreLabel?: string;
  children: ReactNode;
}) {
  return (
    <>
      <TableWrap label={props.label}>
        <table data-testid={props.testId}>
          <caption className="sr-only">{props.caption}</caption>
          <thead>
            <tr>
              {props.columns.map((column) => (
                <th key={column} scope="col">
                  {column}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>{props.children}</tbody>
        </table>
      </TableWrap>
      <MoreButton list={props.list} label={props.moreLabel} />
    </>
  );
}
