import type { ApiError } from '../lib/api.ts';
import { Field } from '../lib/ui.tsx';

/**
 * The field of a two-factor code, wherever one is asked for (signing in, turning two-factor
 * sign-in on or off): the authenticator app's 6 digits, or with `recovery` a recovery code too
 * (letters, so no numeric keyboard). Browsers and password managers fill it as a one-time code.
 */
export function TwoFactorCodeField(props: {
  label: string;
  name: string;
  recovery: boolean;
  value: string;
  onChange: (value: string) => void;
  error: ApiError | null;
  hint?: string;
}) {
  return (
    <Field
      label={props.label}
      name={props.name}
      inputMode={props.recovery ? undefined : 'numeric'}
      autoComplete="one-time-code"
      value={props.value}
      onChange={props.onChange}
      error={props.error}
      hint={props.hint}
    />
  );
}
